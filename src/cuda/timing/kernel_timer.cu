// SPDX-License-Identifier: MIT
#include "simprof/cuda/timing/kernel_timer.hpp"

#include <cuda.h>   // the driver API's types: kernel node parameters and function names
#include <cupti.h>  // cuptiGetGraphId / cuptiGetGraphNodeId: ids only, no subscription

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "../cupti/cupti_hub.hpp"  // OwnNodes: the stamps are not the stage's work
#include "../cupti/describe_devices.hpp"
#include "../runtime/demangle.hpp"
#include "../runtime/on_device.hpp"
#include "simprof/base/log.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/runtime/handle.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/device_clock.cuh"

namespace simprof::cuda {

namespace {

// A node's stamp: the global timer when the node's work is done, at the node's slot.
__global__ void node_stamp_kernel(unsigned long long* at) { *at = global_timer_ns(); }

constexpr int kCalibrationStamps = 33;

// The clock alignment's ping-pong (page-locked memory both sides read and write): box[0] is the
// host's "go" (the probe's generation << 32 | round + 1), box[1] the device's answer (the same
// value once it has written box[2 + round], the global timer). A probe of another generation (one
// left behind by a probe that timed out) returns at once.
constexpr int kProbeRounds = 16;
__global__ void clock_probe_kernel(volatile unsigned long long* box, unsigned long long gen,
                                   int rounds) {
  const unsigned long long t0 = global_timer_ns();
  for (int i = 0; i < rounds; ++i) {
    const unsigned long long want = gen << 32 | static_cast<unsigned long long>(i + 1);
    unsigned long long go = 0;
    while ((go = box[0]) != want)  // a host that gave up (or is gone): 50 ms at the most
      if (go >> 32 != gen || global_timer_ns() - t0 > 50'000'000ULL) return;
    box[2 + i] = global_timer_ns();
    __threadfence_system();
    box[1] = want;
  }
}

// The edges of `n` (its dependencies, or its dependents), with their data (CUDA 13), in `nodes`.
cudaError_t edges_of(cudaGraphNode_t n, bool dependents, std::vector<cudaGraphNode_t>& nodes,
                     std::vector<cudaGraphEdgeData>& data) {
  std::size_t count = 0;
  auto call = [&](cudaGraphNode_t* p, cudaGraphEdgeData* d) {
#if CUDART_VERSION >= 13000
    return dependents ? cudaGraphNodeGetDependentNodes(n, p, d, &count)
                      : cudaGraphNodeGetDependencies(n, p, d, &count);
#else
    return dependents ? cudaGraphNodeGetDependentNodes_v2(n, p, d, &count)
                      : cudaGraphNodeGetDependencies_v2(n, p, d, &count);
#endif
  };
  cudaError_t e = call(nullptr, nullptr);
  if (e != cudaSuccess) return e;
  nodes.resize(count);
  data.resize(count);
  if (count == 0) return cudaSuccess;
  e = call(nodes.data(), data.data());
  nodes.resize(count);
  data.resize(count);
  return e;
}

bool default_edge(const cudaGraphEdgeData& d) {
  return d.from_port == 0 && d.to_port == 0 && d.type == cudaGraphDependencyTypeDefault;
}

cudaError_t add_edge(cudaGraph_t g, cudaGraphNode_t from, cudaGraphNode_t to) {
#if CUDART_VERSION >= 13000
  return cudaGraphAddDependencies(g, &from, &to, nullptr, 1);
#else
  return cudaGraphAddDependencies(g, &from, &to, 1);
#endif
}

cudaError_t remove_edge(cudaGraph_t g, cudaGraphNode_t from, cudaGraphNode_t to) {
#if CUDART_VERSION >= 13000
  return cudaGraphRemoveDependencies(g, &from, &to, nullptr, 1);
#else
  return cudaGraphRemoveDependencies(g, &from, &to, 1);
#endif
}

cudaError_t all_nodes(cudaGraph_t g, std::vector<cudaGraphNode_t>& out) {
  std::size_t n = 0;
  cudaError_t e = cudaGraphGetNodes(g, nullptr, &n);
  if (e != cudaSuccess) return e;
  out.resize(n);
  if (n == 0) return cudaSuccess;
  e = cudaGraphGetNodes(g, out.data(), &n);
  out.resize(n);
  return e;
}

const char* kind_name(cudaGraphNodeType t) {
  switch (t) {
    case cudaGraphNodeTypeKernel:
      return "kernel";
    case cudaGraphNodeTypeMemcpy:
      return "memcpy";
    case cudaGraphNodeTypeMemset:
      return "memset";
    case cudaGraphNodeTypeHost:
      return "host";
    case cudaGraphNodeTypeGraph:
      return "graph";
    case cudaGraphNodeTypeWaitEvent:
      return "event wait";
    case cudaGraphNodeTypeEventRecord:
      return "event record";
    case cudaGraphNodeTypeMemAlloc:
      return "mem alloc";
    case cudaGraphNodeTypeMemFree:
      return "mem free";
    case cudaGraphNodeTypeConditional:
      return "conditional";
    default:
      return "node";
  }
}

}  // namespace

// One node of a copy: what it is, and where its start comes from.
struct NodeInfo {
  std::string name;
  bool kernel = false;
  StageId stage = kNoStage;
  std::uint64_t node_id = 0;
  std::uint32_t index = 0;
  std::vector<std::uint32_t> starts;  // stamp slots within the copy (kHopSlot: a root's start)
  std::uint64_t count = 0;
  double sum_s = 0, min_s = 0, max_s = 0;
  // In a trace: kKernel, kMemcpy or kMemset (kCpuStage: another kind of node, not traced), and
  // Kineto's fields of its kind.
  SpanKind traced = SpanKind::kCpuStage;
  Dim3 grid, block;
  std::uint32_t registers = 0, shared_memory = 0;
  std::uint64_t bytes = 0;
  CopyKind copy = CopyKind::kUnknown;
  std::string stage_name;  // resolved on the loop's thread: a background writer reads it
};

namespace {

using KernelParamsFn = CUresult (*)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*);
using FuncNameFn = CUresult (*)(const char**, CUfunction);
using KernelNameFn = CUresult (*)(const char**, CUkernel);
using FuncAttrFn = CUresult (*)(int*, CUfunction_attribute, CUfunction);
using KernelAttrFn = CUresult (*)(int*, CUfunction_attribute, CUkernel, CUdevice);

// A kernel node's function name, through the driver (kernels launched through the runtime and
// the driver alike: torch's, Triton's, CuPy's raw kernels), demangled; and its launch's shape,
// registers and shared memory, as Kineto writes them.
void describe_kernel(cudaGraphNode_t node, int device, NodeInfo& info) {
  static const auto params =
      reinterpret_cast<KernelParamsFn>(detail::driver_entry_point("cuGraphKernelNodeGetParams"));
  // Both came with CUDA 12.3: asked for at that version.
  static const auto func_name =
      reinterpret_cast<FuncNameFn>(detail::driver_entry_point("cuFuncGetName", 12030));
  static const auto kern_name =
      reinterpret_cast<KernelNameFn>(detail::driver_entry_point("cuKernelGetName", 12030));
  static const auto func_attr =
      reinterpret_cast<FuncAttrFn>(detail::driver_entry_point("cuFuncGetAttribute"));
  static const auto kern_attr =
      reinterpret_cast<KernelAttrFn>(detail::driver_entry_point("cuKernelGetAttribute", 12000));
  info.name = "kernel";
  CUDA_KERNEL_NODE_PARAMS p{};
  if (!params || params(reinterpret_cast<CUgraphNode>(node), &p) != CUDA_SUCCESS) return;
  const char* name = nullptr;
  int regs = 0, smem = 0;
  auto attr = [&](CUfunction_attribute a, int& v) {
    v = 0;
    if (p.func && func_attr) return func_attr(&v, a, p.func) == CUDA_SUCCESS;
    return p.kern && kern_attr && kern_attr(&v, a, p.kern, device) == CUDA_SUCCESS;
  };
  if (p.func && func_name && func_name(&name, p.func) == CUDA_SUCCESS && name)
    info.name = detail::demangle(name);
  else if (p.kern && kern_name && kern_name(&name, p.kern) == CUDA_SUCCESS && name)
    info.name = detail::demangle(name);
  info.grid = Dim3{static_cast<std::int32_t>(p.gridDimX), static_cast<std::int32_t>(p.gridDimY),
                   static_cast<std::int32_t>(p.gridDimZ)};
  info.block = Dim3{static_cast<std::int32_t>(p.blockDimX), static_cast<std::int32_t>(p.blockDimY),
                    static_cast<std::int32_t>(p.blockDimZ)};
  if (attr(CU_FUNC_ATTRIBUTE_NUM_REGS, regs)) info.registers = static_cast<std::uint32_t>(regs);
  if (!attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, smem)) smem = 0;
  info.shared_memory = static_cast<std::uint32_t>(smem) + p.sharedMemBytes;
}

// Which side of a copy `ptr` is on, for a copy whose kind the runtime works out
// (cudaMemcpyDefault).
bool on_device_memory(const void* ptr) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

// A node as the trace shows it: kernels, copies and memsets (the rest are timed, not traced).
void describe_node(cudaGraphNode_t node, cudaGraphNodeType type, int device, NodeInfo& info) {
  info.kernel = type == cudaGraphNodeTypeKernel;
  info.name = kind_name(type);
  if (info.kernel) {
    describe_kernel(node, device, info);
    info.traced = SpanKind::kKernel;
  } else if (type == cudaGraphNodeTypeMemset) {
    cudaMemsetParams m{};
    if (cudaGraphMemsetNodeGetParams(node, &m) == cudaSuccess) {
      info.traced = SpanKind::kMemset;
      info.bytes = std::uint64_t{m.elementSize} * m.width * std::max<std::size_t>(m.height, 1);
    } else {
      (void)cudaGetLastError();
    }
  } else if (type == cudaGraphNodeTypeMemcpy) {
    cudaMemcpy3DParms m{};
    if (cudaGraphMemcpyNodeGetParams(node, &m) == cudaSuccess) {
      info.traced = SpanKind::kMemcpy;
      info.bytes = std::uint64_t{m.extent.width} * std::max<std::size_t>(m.extent.height, 1) *
                   std::max<std::size_t>(m.extent.depth, 1);
      bool from_device = m.srcArray != nullptr, to_device = m.dstArray != nullptr;
      switch (m.kind) {
        case cudaMemcpyHostToDevice:
          to_device = true;
          break;
        case cudaMemcpyDeviceToHost:
          from_device = true;
          break;
        case cudaMemcpyDeviceToDevice:
          from_device = to_device = true;
          break;
        case cudaMemcpyHostToHost:
          break;
        default:
          from_device = from_device || on_device_memory(m.srcPtr.ptr);
          to_device = to_device || on_device_memory(m.dstPtr.ptr);
      }
      info.copy = from_device ? (to_device ? CopyKind::kDtoD : CopyKind::kDtoH)
                              : (to_device ? CopyKind::kHtoD : CopyKind::kHtoH);
    } else {
      (void)cudaGetLastError();
    }
  }
}

}  // namespace

// The GPU's global timer against the trace's timebase at one instant: the ping-pong round with the
// shortest round trip (its midpoint on the host), and half that round trip (how far off it can be).
struct ClockPoint {
  bool ok = false;
  std::int64_t device_ns = 0, host_ns = 0, error_ns = 0;
};

// A copy's stamps in the device row, from `offset`: the begin stamp, the hop stamp right after it
// (what one stamp adds to a chain, in this replay), then one per node (node i at kFirstNode + i).
constexpr std::uint32_t kBeginSlot = 0, kHopSlot = 1, kFirstNode = 2;

// A stamped copy: its stamps' slots in the device row [offset, offset + kFirstNode + nodes.size()).
struct Copy {
  cudaGraph_t made = nullptr;  // the graph handed out (alive until copy_released())
  std::uint64_t made_in = 0;   // the step it was made in (readings of earlier steps are not its)
  // copy_released(): the first step it cannot have run in (readings of it and later are not its;
  // those of earlier steps still arriving are); its slots are free from then.
  std::uint64_t retired_from = std::numeric_limits<std::uint64_t>::max();
  bool retired() const { return retired_from != std::numeric_limits<std::uint64_t>::max(); }
  std::size_t offset = 0;
  std::uint64_t graph_id = 0;
  std::vector<NodeInfo> nodes;
  std::size_t slots() const { return kFirstNode + nodes.size(); }
};

struct GraphKernelTimer::Impl final : StepListener {
  struct Pending;
  Impl(StepProfiler& prof, cudaStream_t stream, GraphKernelTimerOptions o);
  ~Impl() override;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void on_step_begin(std::uint64_t step, std::int64_t ticks) override;
  void on_stage_begin(StageId id, std::int64_t ticks) override;
  void on_stage_end(StageId id, std::int64_t ticks) override;
  void on_step_end(std::uint64_t step, std::int64_t ticks, StepOutcome outcome) override;
  bool wants_worker_zones() const noexcept override { return false; }

  void place_captured(StageId open) noexcept;  // nodes captured so far that have no stage: `open`
  cudaGraph_t instrumented_copy(cudaGraph_t graph) noexcept;
  cudaGraph_t build_copy(cudaGraph_t graph, Copy& out);  // throws CudaError
  // With `mu` held: the sampled step's row zeroed (begin) and read back (finish); the readings in.
  void begin_sample(std::uint64_t step) noexcept;
  void finish_sample(std::uint64_t step) noexcept;
  void poll_locked() noexcept;
  void read(std::size_t slot, const Pending& p) noexcept;
  void release(cudaGraph_t copy) noexcept;
  void calibrate();
  ClockPoint probe_clock() noexcept;       // the ping-pong (start() and stop_and_collect() only)
  void add_spans(std::vector<Span>& out);  // the window's replays, with `mu` held
  // With `mu` held: a new window generation (readings of earlier ones are no window's, nothing
  // counted yet); the step in progress, already stamped, made the window's.
  void next_generation() noexcept;
  bool adopt_sampled_step() noexcept;  // false: no step in progress is stamped
  // One warning for the timer's life (formatted inside: never throws).
  template <class... Args>
  void say(fmt::format_string<Args...> f, Args&&... args) noexcept {
    say_once(said, f, std::forward<Args>(args)...);
  }
  // One warning for the timer's life per `flag`: a problem with its own fix is said apart.
  template <class... Args>
  void say_once(std::atomic<bool>& flag, fmt::format_string<Args...> f, Args&&... args) noexcept {
    if (flag.exchange(true)) return;
    try {
      simprof::default_logger()->warn("simprof: GraphKernelTimer: {} (said once; counted after)",
                                      fmt::format(f, std::forward<Args>(args)...));
    } catch (...) {
    }
  }

  class Hook final : public GraphInstrumentation {
   public:
    explicit Hook(Impl* t) : timer_(t) {}
    void detach() noexcept { timer_ = nullptr; }
    void capture_begins(cudaStream_t s) noexcept override {
      if (!timer_) return;
      timer_->capturing = true;
      timer_->capture_stream = s;
      timer_->capture_graph = nullptr;
      timer_->placed.clear();
      timer_->open_stages.clear();  // reserved: kMaxDepth + 1 never allocates
      timer_->open_stages.push_back(timer_->prof.innermost_stage());
    }
    void capture_ends() noexcept override {
      if (timer_) timer_->capturing = false;
    }
    cudaGraph_t instrumented_copy(cudaGraph_t graph) noexcept override {
      return timer_ ? timer_->instrumented_copy(graph) : nullptr;
    }
    bool instrumented_launch() const noexcept override { return timer_ && timer_->sampled; }
    void copy_released(cudaGraph_t copy) noexcept override {
      if (timer_) timer_->release(copy);
    }

   private:
    Impl* timer_;
  };

  // A sampled step's readings on their way to the host.
  struct Pending {
    std::uint64_t step = 0;
    std::size_t used = 0;  // stamps in use when the step ended
    bool busy = false;
    bool traced = false;    // a trace window's step...
    std::uint64_t gen = 0;  // ...of this window (or warm-up) generation
  };

  StepProfiler& prof;
  cudaStream_t stream;
  int device_id;
  GraphKernelTimerOptions options;
  DeviceBuffer<unsigned long long> stamps;  // the row every copy's stamps write into
  PinnedBuffer<unsigned long long> host;    // ring x max_stamps: the rows read back
  std::vector<Event> copied;                // by ring slot: the row's copy is on the host
  // Guards what a background TraceSession's writer also reads: the ring's state, the copies, the
  // statistics and the window's readings. The loop's thread takes it on sampled steps and while
  // readings are on their way; the writer, never while it waits for the GPU.
  mutable std::mutex mu;
  std::vector<Pending> pending;  // by ring slot
  std::size_t next_slot = 0;
  std::atomic<std::size_t> in_flight{0};  // busy ring slots
  std::shared_ptr<Hook> hook;
  std::vector<Copy> copies;
  std::size_t used = 0;  // the row's slots in use, free ranges included
  std::vector<std::pair<std::size_t, std::size_t>> free_ranges;  // retired copies' (offset, size)
  std::uint64_t step_now = 0;                                    // the step in progress
  bool begun = false;    // a step is in progress (our on_step_begin ran, on_step_end not yet)
  bool sampled = false;  // the step in progress runs the stamped copies
  std::uint64_t sampled_step = 0;
  bool sampled_traced = false;  // ...in a trace window of generation sampled_gen
  std::uint64_t sampled_gen = 0;
  // The capture in progress: its stream, graph, the stages open, the nodes placed.
  bool capturing = false;
  cudaStream_t capture_stream = nullptr;
  cudaGraph_t capture_graph = nullptr;
  std::vector<StageId> open_stages;
  std::unordered_map<cudaGraphNode_t, StageId> placed;
  std::vector<cudaGraphNode_t> scratch;
  double hop_ns = 0;      // calibrated when made; then the mean of the replays' own hops
  double hop_sum_ns = 0;  // over the replays read
  std::uint64_t n_replays = 0, n_missed = 0, n_dropped = 0, n_unstamped = 0;
  std::function<void(const KernelReplay&)> on_replay;
  KernelReplay replay;                 // scratch for on_replay
  std::atomic<bool> said{false};       // the loop's thread and a background writer may both say
  std::atomic<bool> said_ring{false};  // the host outran the ring (its own fix: pace the loop)

  // Trace windows (TraceSource). The window's flags and counts are under `mu`.
  TimeBase time_base;
  std::uint32_t stream_id = 0;   // CUPTI's number of the stream (its kernel records' streamId)
  bool window_open = false;      // the steps now are a window's (warm-up or active)
  std::uint64_t window_gen = 0;  // readings of another generation are not the window's
  std::uint64_t window_sampled = 0, window_done = 0;  // its stamped steps; those read or lost
  struct Traced {  // a window's replay as read: its copy and its stamps
    std::uint64_t step = 0;
    std::uint32_t copy = 0;
    std::size_t at = 0;  // its stamps: traced_stamps[at, at + copy's slots)
  };
  std::vector<Traced> traced;
  std::vector<unsigned long long> traced_stamps;
  std::uint64_t window_lost = 0, trace_lost = 0;
  std::uint64_t window_missed = 0;  // the window's steps that ran no stamped copy
  struct LastWindow {               // what describe() says of the window collected last
    std::size_t replays = 0;
    std::uint64_t missed = 0, lost = 0;
    bool cupti = false;
  } last_window;
  bool window_cupti = false;  // a KernelTracer traced the window: its records are the truth

  ClockPoint clock_from, clock_to;  // at the window's start, at its collection
  std::atomic<double> clock_error{0};
  // The ping-pong: its own stream (the greatest priority) and page-locked box.
  Stream probe_stream;
  PinnedBuffer<unsigned long long> probe_box;
  std::uint64_t probe_gen = 0;
  ListenerAttachment attached;  // last: the first to go, so no call reaches a half-gone listener
};

namespace {

int greatest_priority() {
  int least = 0, greatest = 0;
  if (cudaDeviceGetStreamPriorityRange(&least, &greatest) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return greatest;
}

GraphKernelTimerOptions checked(GraphKernelTimerOptions o) {
  if (o.sample_every < 1)
    throw std::invalid_argument(fmt::format(
        "simprof: GraphKernelTimerOptions.sample_every = {} (expected >= 1)", o.sample_every));
  if (o.sample_offset == -1) o.sample_offset = o.sample_every > 8 ? 8 : 0;
  if (o.sample_offset < 0 || o.sample_offset >= o.sample_every)
    throw std::invalid_argument(
        fmt::format("simprof: GraphKernelTimerOptions.sample_offset = {} (expected -1, or 0 to "
                    "sample_every - 1 = {})",
                    o.sample_offset, o.sample_every - 1));
  if (o.ring < 1)
    throw std::invalid_argument("simprof: GraphKernelTimerOptions.ring = 0 (expected >= 1)");
  if (o.max_stamps < 2)
    throw std::invalid_argument(fmt::format(
        "simprof: GraphKernelTimerOptions.max_stamps = {} (expected >= 2)", o.max_stamps));
  return o;
}

}  // namespace

GraphKernelTimer::Impl::Impl(StepProfiler& p, cudaStream_t s, GraphKernelTimerOptions o)
    : prof(p),
      stream(s),
      device_id(bind_device(s, "GraphKernelTimer")),
      options(checked(o)),
      stamps(options.max_stamps),
      host(options.ring * options.max_stamps),
      pending(options.ring),
      hook(std::make_shared<Hook>(this)),
      probe_stream(cudaStreamNonBlocking, greatest_priority()),
      probe_box(2 + kProbeRounds, cudaHostAllocMapped) {
  for (std::size_t i = 0; i < options.ring; ++i) copied.emplace_back(cudaEventDisableTiming);
  // The number CUPTI's kernel records give the stream (no subscription), else the runtime's.
  if (cuptiGetStreamIdEx(nullptr, stream, 0, &stream_id) != CUPTI_SUCCESS) {
    unsigned long long id = 0;
    if (cudaStreamGetId(stream, &id) != cudaSuccess) (void)cudaGetLastError();
    stream_id = static_cast<std::uint32_t>(id);
  }
  open_stages.reserve(StepProfiler::kMaxDepth + 1);
  // Never-written slots read 0: a copy made during a sampled step finds its row clean.
  stamps.fill_zero(stream);
  calibrate();
  attached = prof.attach(*this);  // last: nothing below can throw once the profiler calls us
}

GraphKernelTimer::Impl::~Impl() {
  hook->detach();
  attached.detach();
  cudaStreamSynchronize(stream);  // copies of the row may be in flight; errors not thrown here
}

// What one stamp adds to a chain: a graph of kCalibrationStamps stamps, each after the previous
// one, launched 3 times (the first loads and warms): the median gap between two consecutive stamps
// of the last launch.
void GraphKernelTimer::Impl::calibrate() {
  DeviceBuffer<unsigned long long> t(kCalibrationStamps);
  GraphHandle g;
  SIMPROF_CUDA_CHECK(cudaGraphCreate(g.out(), 0));
  cudaKernelNodeParams kp{};
  kp.gridDim = dim3(1);
  kp.blockDim = dim3(1);
  kp.func = reinterpret_cast<void*>(&node_stamp_kernel);
  cudaGraphNode_t prev = nullptr;
  for (int i = 0; i < kCalibrationStamps; ++i) {
    unsigned long long* at = t.data() + i;
    void* args[] = {&at};
    kp.kernelParams = args;
    cudaGraphNode_t n = nullptr;
    SIMPROF_CUDA_CHECK(
        cudaGraphAddKernelNode(&n, g.get(), prev ? &prev : nullptr, prev ? 1 : 0, &kp));
    prev = n;
  }
  GraphExecHandle exec;
  SIMPROF_CUDA_CHECK(cudaGraphInstantiate(exec.out(), g.get(), 0));
  for (int i = 0; i < 3; ++i) SIMPROF_CUDA_CHECK(cudaGraphLaunch(exec.get(), stream));
  unsigned long long h[kCalibrationStamps] = {};
  t.copy_to_host(h, kCalibrationStamps, stream);
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
  double gaps[kCalibrationStamps - 1];
  for (int i = 0; i + 1 < kCalibrationStamps; ++i) gaps[i] = static_cast<double>(h[i + 1] - h[i]);
  constexpr int mid = (kCalibrationStamps - 1) / 2;
  std::nth_element(gaps, gaps + mid, gaps + (kCalibrationStamps - 1));
  hop_ns = gaps[mid];
}

void GraphKernelTimer::Impl::on_step_begin(std::uint64_t step, std::int64_t) {
  sampled = false;
  begun = true;
  step_now = step;
  if (step % static_cast<std::uint64_t>(options.sample_every) !=
          static_cast<std::uint64_t>(options.sample_offset) &&
      !(window_open && options.trace_every_step &&  // window_open: set on this thread
        !detail::kernel_tracer_window_open()))      // CUPTI records the window's kernels anyway
    return;
  const std::lock_guard<std::mutex> lock(mu);
  begin_sample(step);
}

void GraphKernelTimer::Impl::begin_sample(std::uint64_t step) noexcept {
  const bool in_window = window_open;
  Pending& p = pending[next_slot];
  if (p.busy) {
    poll_locked();
    // A window's step waits for the oldest reading rather than leave itself out of the trace.
    if (p.busy && in_window && options.trace_every_step) {
      if (cudaEventSynchronize(copied[next_slot].get()) != cudaSuccess) (void)cudaGetLastError();
      poll_locked();
    }
    if (p.busy) {  // the host is a whole ring of samples ahead of the GPU: this one is left out
      ++n_dropped;
      if (in_window) ++window_lost;
      say_once(said_ring,
               "sampled step {} is left out: the host is {} sampled replays ahead of the GPU "
               "(the ring's size); pace the loop (simprof::cuda::GpuProfile, a StepPacer or a "
               "DeviceStageTimer) or raise GraphKernelTimerOptions.ring",
               step, options.ring);
      return;
    }
  }
  // The row zeroed on the stream before the step's work: a copy's begin slot then says whether it
  // ran in this step, and a slot left 0 that its stamp did not run.
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess ||
      status != cudaStreamCaptureStatusNone) {
    (void)cudaGetLastError();
    ++n_missed;
    return;  // the step itself is being captured by someone: no eager work can go in it
  }
  if (used > 0) {
    const cudaError_t e =
        cudaMemsetAsync(stamps.data(), 0, used * sizeof(unsigned long long), stream);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      ++n_missed;
      if (in_window) ++window_lost;
      say("cudaMemsetAsync of the stamps failed: {}", cudaGetErrorName(e));
      return;
    }
  }
  sampled = true;
  sampled_step = step;
  sampled_traced = in_window;
  sampled_gen = window_gen;
  if (in_window) ++window_sampled;
}

void GraphKernelTimer::Impl::place_captured(StageId open) noexcept {
  CaptureInfo ci;
  if (capture_info(capture_stream, ci) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  if (ci.status != cudaStreamCaptureStatusActive || ci.graph == nullptr) return;
  try {
    if (capture_graph != ci.graph) {
      capture_graph = ci.graph;
      placed.clear();
    }
    if (all_nodes(ci.graph, scratch) != cudaSuccess) {
      (void)cudaGetLastError();
      return;
    }
    for (const cudaGraphNode_t n : scratch) placed.emplace(n, open);  // kept where already placed
  } catch (...) {  // out of memory: those nodes take the stage open at the capture's end
  }
}

void GraphKernelTimer::Impl::on_stage_begin(StageId id, std::int64_t) {
  if (!capturing) return;
  place_captured(open_stages.empty() ? kNoStage : open_stages.back());
  if (open_stages.size() < open_stages.capacity()) open_stages.push_back(id);  // never allocates
}

void GraphKernelTimer::Impl::on_stage_end(StageId, std::int64_t) {
  if (!capturing) return;
  place_captured(open_stages.empty() ? kNoStage : open_stages.back());
  if (open_stages.size() > 1) open_stages.pop_back();
}

cudaGraph_t GraphKernelTimer::Impl::instrumented_copy(cudaGraph_t graph) noexcept {
  if (graph == nullptr) return nullptr;
  try {
    Copy c;
    cudaGraph_t copy = build_copy(graph, c);
    if (copy == nullptr) return nullptr;
    c.made = copy;
    c.made_in = step_now;
    const std::lock_guard<std::mutex> lock(mu);
    copies.push_back(std::move(c));
    return copy;
  } catch (const std::exception& e) {
    ++n_unstamped;
    say("a graph replays without stamps: {}", e.what());
  } catch (...) {
    ++n_unstamped;
  }
  return nullptr;
}

cudaGraph_t GraphKernelTimer::Impl::build_copy(cudaGraph_t graph, Copy& c) {
  // Nodes not placed during the capture (no boundary after them, or a graph captured elsewhere)
  // take the stage open now, at the capture's end.
  const StageId open_now = open_stages.empty() ? kNoStage : open_stages.back();
  const bool known = graph == capture_graph;
  std::vector<cudaGraphNode_t> nodes;
  SIMPROF_CUDA_CHECK(all_nodes(graph, nodes));
  std::unordered_map<cudaGraphNode_t, std::uint32_t> slot_of;  // stamped node -> its slot
  std::unordered_map<cudaGraphNode_t, std::uint32_t> index_of;
  std::vector<cudaGraphNode_t> stamped;
  std::vector<cudaGraphNodeType> types;  // of the stamped nodes
  for (const cudaGraphNode_t n : nodes) {
    index_of[n] = static_cast<std::uint32_t>(index_of.size());
    cudaGraphNodeType t{};
    SIMPROF_CUDA_CHECK(cudaGraphNodeGetType(n, &t));
    if (t == cudaGraphNodeTypeEmpty) continue;
    slot_of[n] = kFirstNode + static_cast<std::uint32_t>(stamped.size());
    stamped.push_back(n);
    types.push_back(t);
  }
  if (stamped.empty()) return nullptr;
  const std::size_t need = kFirstNode + stamped.size();
  // A retired copy's range (first fit), else the end of the row.
  auto fit = std::find_if(free_ranges.begin(), free_ranges.end(),
                          [&](const auto& r) { return r.second >= need; });
  if (fit == free_ranges.end() && used + need > options.max_stamps) {
    ++n_unstamped;
    say("a graph of {} nodes replays without stamps: the copies made hold {} of max_stamps = {}",
        stamped.size(), used, options.max_stamps);
    return nullptr;
  }
  c.offset = fit != free_ranges.end() ? fit->first : used;
  c.graph_id = 0;
  std::uint32_t gid = 0;
  if (cuptiGetGraphId(graph, &gid) == CUPTI_SUCCESS) c.graph_id = gid;
  // What each stamped node's start is: its dependencies' stamps, through empty nodes.
  std::vector<cudaGraphNode_t> deps;
  std::vector<cudaGraphEdgeData> data;
  c.nodes.reserve(stamped.size());
  for (std::size_t i = 0; i < stamped.size(); ++i) {
    const cudaGraphNode_t n = stamped[i];
    NodeInfo info;
    describe_node(n, types[i], device_id, info);
    const auto it = known ? placed.find(n) : placed.end();
    info.stage = it != placed.end() ? it->second : open_now;
    if (info.stage != kNoStage) info.stage_name = std::string(prof.stage_name(info.stage));
    std::uint64_t nid = 0;
    if (cuptiGetGraphNodeId(n, &nid) == CUPTI_SUCCESS) info.node_id = nid;
    info.index = index_of.at(n);
    std::vector<cudaGraphNode_t> walk{n};
    std::unordered_set<cudaGraphNode_t> seen;
    while (!walk.empty()) {
      const cudaGraphNode_t w = walk.back();
      walk.pop_back();
      SIMPROF_CUDA_CHECK(edges_of(w, false, deps, data));
      if (deps.empty()) info.starts.push_back(kHopSlot);  // a root (or an empty one)
      for (const cudaGraphNode_t d : deps) {
        if (!seen.insert(d).second) continue;
        const auto s = slot_of.find(d);
        if (s != slot_of.end())
          info.starts.push_back(s->second);
        else
          walk.push_back(d);  // an empty node: its own dependencies
      }
    }
    std::sort(info.starts.begin(), info.starts.end());
    info.starts.erase(std::unique(info.starts.begin(), info.starts.end()), info.starts.end());
    c.nodes.push_back(std::move(info));
  }

  // The copy: the graph's clone, a begin stamp before its roots, a stamp after each node.
  const detail::OwnNodes own;  // a kernel tracer gives the stamps no stage
  GraphHandle copy;
  SIMPROF_CUDA_CHECK(cudaGraphClone(copy.out(), graph));
  std::vector<cudaGraphNode_t> roots;
  std::size_t n_roots = 0;
  SIMPROF_CUDA_CHECK(cudaGraphGetRootNodes(copy.get(), nullptr, &n_roots));
  roots.resize(n_roots);
  SIMPROF_CUDA_CHECK(cudaGraphGetRootNodes(copy.get(), roots.data(), &n_roots));
  roots.resize(n_roots);
  int greatest = greatest_priority();
  cudaKernelNodeParams kp{};
  kp.gridDim = dim3(1);
  kp.blockDim = dim3(1);
  kp.func = reinterpret_cast<void*>(&node_stamp_kernel);
  auto add_stamp = [&](std::size_t slot, const cudaGraphNode_t* after, std::size_t n_after) {
    unsigned long long* at = stamps.data() + c.offset + slot;
    void* args[] = {&at};
    kp.kernelParams = args;
    cudaGraphNode_t s = nullptr;
    SIMPROF_CUDA_CHECK(cudaGraphAddKernelNode(&s, copy.get(), after, n_after, &kp));
    // At the greatest priority the block scheduler takes a stamp at the next free slot, ahead of
    // other branches' waiting blocks (stage_timer.cu).
    if (greatest != 0) {
      cudaKernelNodeAttrValue v{};
      v.priority = greatest;
      if (cudaGraphKernelNodeSetAttribute(s, cudaKernelNodeAttributePriority, &v) != cudaSuccess) {
        (void)cudaGetLastError();
        greatest = 0;
      }
    }
    return s;
  };
  const cudaGraphNode_t begin = add_stamp(kBeginSlot, nullptr, 0);
  const cudaGraphNode_t hop = add_stamp(kHopSlot, &begin, 1);
  for (const cudaGraphNode_t r : roots) SIMPROF_CUDA_CHECK(add_edge(copy.get(), hop, r));
  std::vector<cudaGraphNode_t> outs;
  for (std::size_t i = 0; i < stamped.size(); ++i) {
    cudaGraphNode_t mine = nullptr;
    SIMPROF_CUDA_CHECK(cudaGraphNodeFindInClone(&mine, stamped[i], copy.get()));
    SIMPROF_CUDA_CHECK(edges_of(mine, true, outs, data));
    const cudaGraphNode_t s = add_stamp(kFirstNode + i, &mine, 1);
    // In the chain: what waited for the node waits for its stamp. An edge with data of its own (a
    // programmatic port) stays as it is, and the stamp is added before its node as well.
    for (std::size_t k = 0; k < outs.size(); ++k) {
      if (default_edge(data[k])) SIMPROF_CUDA_CHECK(remove_edge(copy.get(), mine, outs[k]));
      SIMPROF_CUDA_CHECK(add_edge(copy.get(), s, outs[k]));
    }
  }
  if (fit != free_ranges.end()) {
    fit->first += need;
    fit->second -= need;
    if (fit->second == 0) free_ranges.erase(fit);
  } else {
    used += need;
  }
  return copy.release();
}

void GraphKernelTimer::Impl::release(cudaGraph_t made) noexcept {
  const std::lock_guard<std::mutex> lock(mu);
  for (Copy& c : copies)
    if (c.made == made && !c.retired()) {
      // Inside a step it runs no more from this step on; between steps, from the next.
      c.retired_from = prof.in_step() ? step_now : step_now + 1;
      c.made = nullptr;  // the graph goes after this call: its address may be handed out again
      try {
        free_ranges.emplace_back(c.offset, c.slots());
      } catch (...) {  // out of memory: the range stays taken
      }
      return;
    }
}

void GraphKernelTimer::Impl::on_step_end(std::uint64_t step, std::int64_t, StepOutcome) {
  begun = false;
  if (!sampled || step != sampled_step) {
    if (in_flight.load(std::memory_order_relaxed) > 0) {  // a sample's row is on its way
      const std::lock_guard<std::mutex> lock(mu);
      poll_locked();
    }
    return;
  }
  const std::lock_guard<std::mutex> lock(mu);
  finish_sample(step);
}

void GraphKernelTimer::Impl::finish_sample(std::uint64_t step) noexcept {
  sampled = false;
  const bool counted = sampled_traced && sampled_gen == window_gen;  // in window_sampled
  // The row, once the step's work is done, into this ring slot's host row; read at a later poll.
  const std::size_t slot = next_slot;
  Pending& p = pending[slot];
  cudaError_t e = cudaSuccess;
  if (used > 0)
    e = cudaMemcpyAsync(host.data() + slot * options.max_stamps, stamps.data(),
                        used * sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream);
  if (e == cudaSuccess) e = cudaEventRecord(copied[slot].get(), stream);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    ++n_dropped;
    if (counted) {
      ++window_done;
      ++window_lost;
    }
    say("reading the stamps back failed: {}", cudaGetErrorName(e));
    return;
  }
  p.step = step;
  p.used = used;
  p.traced = sampled_traced;
  p.gen = sampled_gen;
  p.busy = true;
  in_flight.fetch_add(1, std::memory_order_relaxed);
  next_slot = (next_slot + 1) % options.ring;
  poll_locked();
}

void GraphKernelTimer::Impl::poll_locked() noexcept {
  // In ring order from the oldest: the slot after the newest.
  for (std::size_t k = 0; k < options.ring; ++k) {
    const std::size_t slot = (next_slot + k) % options.ring;
    Pending& p = pending[slot];
    if (!p.busy) continue;
    const cudaError_t e = cudaEventQuery(copied[slot].get());
    if (e == cudaErrorNotReady) return;  // the later ones are behind it on the stream
    p.busy = false;
    in_flight.fetch_sub(1, std::memory_order_relaxed);
    const bool counted = p.traced && p.gen == window_gen;
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      ++n_dropped;
      if (counted) ++window_lost;
    } else {
      read(slot, p);
    }
    if (counted) ++window_done;
  }
}

void GraphKernelTimer::Impl::read(std::size_t slot, const Pending& p) noexcept {
  const std::uint64_t step = p.step;
  const std::size_t n = p.used;
  const bool trace = p.traced && p.gen == window_gen;
  const unsigned long long* row = host.data() + slot * options.max_stamps;
  bool any = false;
  for (std::uint32_t ci = 0; ci < copies.size(); ++ci) {
    Copy& c = copies[ci];
    // Retired, made after that step, or beyond the row read: not this step's.
    if (step >= c.retired_from || c.made_in > step || c.offset + c.slots() > n) continue;
    const unsigned long long* t = row + c.offset;
    if (t[kBeginSlot] == 0) continue;  // not launched in that step
    any = true;
    bool complete = true;
    unsigned long long last = t[kBeginSlot];
    for (std::size_t i = kHopSlot; i < c.slots(); ++i) {
      complete = complete && t[i] != 0;
      last = std::max(last, t[i]);
    }
    if (!complete) {
      ++n_dropped;
      if (trace) ++window_lost;
      say("a sampled replay of step {} is left out: one of its stamps did not run", step);
      continue;
    }
    if (trace) {
      try {  // the window's replays, turned into spans when it is collected
        traced.push_back(Traced{step, ci, traced_stamps.size()});
        traced_stamps.insert(traced_stamps.end(), t, t + c.slots());
      } catch (...) {
        ++window_lost;
      }
    }
    ++n_replays;
    // What one stamp added to the chain in this replay: the hop stamp after the begin stamp.
    const double hop = static_cast<double>(t[kHopSlot] - t[kBeginSlot]);
    hop_sum_ns += hop;
    hop_ns = hop_sum_ns / static_cast<double>(n_replays);
    const bool tell = static_cast<bool>(on_replay);
    if (tell) {
      try {
        replay.step = step;
        replay.copy = ci;
        replay.span_s = static_cast<double>(last - t[kBeginSlot]) * 1e-9;
        replay.node_s.resize(c.nodes.size());
      } catch (...) {
      }
    }
    for (std::size_t i = 0; i < c.nodes.size(); ++i) {
      NodeInfo& node = c.nodes[i];
      unsigned long long start = 0;
      for (const std::uint32_t s : node.starts) start = std::max(start, t[s]);
      const double d = std::max(
          0.0, (static_cast<double>(t[kFirstNode + i]) - static_cast<double>(start) - hop) * 1e-9);
      node.min_s = node.count == 0 ? d : std::min(node.min_s, d);
      node.max_s = node.count == 0 ? d : std::max(node.max_s, d);
      node.sum_s += d;
      ++node.count;
      if (tell && i < replay.node_s.size()) replay.node_s[i] = d;
    }
    if (tell) {
      try {
        on_replay(replay);
      } catch (...) {  // a callback's failure is not the timer's
      }
    }
  }
  if (!any) {
    ++n_missed;
    if (trace) ++window_missed;
  }
}

// The ping-pong: the host writes "go", the probe kernel (on its own stream, at the greatest
// priority) stamps the global timer and answers; each round's midpoint on the host against the
// stamp, the round with the shortest round trip kept. The first round waits up to 20 ms for the
// probe to find room on the GPU; a probe that never answers is told to quit by the next one's
// generation. Not ok when it did not answer or a CUDA call failed (the window's spans then use
// the other end's point alone, or are left out).
ClockPoint GraphKernelTimer::Impl::probe_clock() noexcept {
  ClockPoint best;
  volatile unsigned long long* box = probe_box.data();
  const unsigned long long gen = ++probe_gen & 0xffffffffULL;
  box[1] = 0;
  box[0] = gen << 32;  // round 0 not yet: an older probe sees another generation and returns
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const auto quit = [&] { box[0] = ((gen + 1) & 0xffffffffULL) << 32; };  // a generation of its own
  unsigned long long* dbox = nullptr;
  (void)cudaGetLastError();  // an earlier call's error is not this launch's
  if (cudaHostGetDevicePointer(reinterpret_cast<void**>(&dbox), probe_box.data(), 0) !=
      cudaSuccess) {
    (void)cudaGetLastError();
    return best;
  }
  clock_probe_kernel<<<1, 1, 0, probe_stream.get()>>>(dbox, gen, kProbeRounds);
  if (cudaGetLastError() != cudaSuccess) {
    quit();
    return best;
  }
  std::int64_t best_rtt = std::numeric_limits<std::int64_t>::max();
  for (int i = 0; i < kProbeRounds; ++i) {
    const unsigned long long want = gen << 32 | static_cast<unsigned long long>(i + 1);
    const std::int64_t limit = i == 0 ? 20'000'000 : 1'000'000;  // ns
    const std::int64_t t0 = time_base.now_ns();
    box[0] = want;
    std::int64_t t1 = t0;
    while (box[1] != want) {
      t1 = time_base.now_ns();
      if (t1 - t0 > limit) {
        quit();
        return best;
      }
    }
    t1 = time_base.now_ns();
    std::atomic_thread_fence(std::memory_order_acquire);  // the stamp below after the answer
    const std::int64_t g = static_cast<std::int64_t>(box[2 + i]);
    if (t1 - t0 < best_rtt) {
      best_rtt = t1 - t0;
      best.ok = true;
      best.device_ns = g;
      best.host_ns = t0 + (t1 - t0) / 2;
      best.error_ns = (t1 - t0 + 1) / 2;
    }
  }
  return best;
}

// The window's replays as device spans: a node ends at its stamp and lasts its reading (so it
// starts after its predecessors' stamps and the hop), on the timer's stream; one correlation id a
// replay. Device nanoseconds go onto the timebase through the two clock points (interpolated: the
// GPU's timer and the host's clock may run at slightly different rates), or one where the other
// failed.
void GraphKernelTimer::Impl::add_spans(std::vector<Span>& out) {
  const ClockPoint& a = clock_from.ok ? clock_from : clock_to;
  const ClockPoint& b = clock_to.ok ? clock_to : clock_from;
  const double rate = a.ok && b.ok && b.device_ns != a.device_ns
                          ? static_cast<double>(b.host_ns - a.host_ns) /
                                static_cast<double>(b.device_ns - a.device_ns)
                          : 1.0;
  auto to_host = [&](unsigned long long g) {
    return a.host_ns + static_cast<std::int64_t>(std::llround(
                           static_cast<double>(static_cast<std::int64_t>(g) - a.device_ns) * rate));
  };
  for (const Traced& r : traced) {
    const Copy& c = copies[r.copy];
    const unsigned long long* t = traced_stamps.data() + r.at;
    const unsigned long long hop = t[kHopSlot] - t[kBeginSlot];
    // Process-wide: two timers' spans in one trace never share an id.
    static std::atomic<std::uint64_t> next_correlation{std::uint64_t{1} << 32};
    const std::uint64_t correlation = next_correlation.fetch_add(1, std::memory_order_relaxed);
    for (std::size_t i = 0; i < c.nodes.size(); ++i) {
      const NodeInfo& node = c.nodes[i];
      if (node.traced == SpanKind::kCpuStage) continue;
      unsigned long long start = 0;
      for (const std::uint32_t s : node.starts) start = std::max(start, t[s]);
      const unsigned long long end = t[kFirstNode + i];
      const unsigned long long begin = std::min(end, start + hop);  // a reading of 0 is clamped
      const std::int64_t b_ns = to_host(begin), e_ns = to_host(end);
      if (node.traced == SpanKind::kMemset) {
        out.push_back(Span::memset(node.bytes, b_ns, e_ns, device_id, stream_id, correlation));
        continue;
      }
      if (node.traced == SpanKind::kMemcpy) {
        out.push_back(
            Span::memcpy(node.copy, node.bytes, b_ns, e_ns, device_id, stream_id, correlation));
        continue;
      }
      out.push_back(Span::kernel(node.name, b_ns, e_ns, device_id, stream_id, correlation));
      KernelPayload& k = out.back().get<KernelPayload>();
      k.graph_id = c.graph_id;
      k.graph_node_id = node.node_id;
      k.stage = node.stage_name;
      k.grid = node.grid;
      k.block = node.block;
      k.registers = node.registers;
      k.shared_memory = node.shared_memory;
    }
  }
}

GraphKernelTimer::GraphKernelTimer(StepProfiler& prof, cudaStream_t stream,
                                   GraphKernelTimerOptions options)
    : impl_(std::make_unique<Impl>(prof, stream, options)) {}
GraphKernelTimer::~GraphKernelTimer() = default;

std::shared_ptr<GraphInstrumentation> GraphKernelTimer::instrumentation() const noexcept {
  return impl_->hook;
}
void GraphKernelTimer::poll() noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->poll_locked();
}
void GraphKernelTimer::synchronize() {
  std::vector<cudaEvent_t> wait;
  {
    const std::lock_guard<std::mutex> lock(impl_->mu);
    for (std::size_t i = 0; i < impl_->options.ring; ++i)
      if (impl_->pending[i].busy) wait.push_back(impl_->copied[i].get());
  }
  for (cudaEvent_t e : wait) SIMPROF_CUDA_CHECK(cudaEventSynchronize(e));
  poll();
}

std::vector<KernelNodeTime> GraphKernelTimer::nodes() const {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<KernelNodeTime> out;
  for (std::uint32_t ci = 0; ci < impl_->copies.size(); ++ci) {
    const Copy& c = impl_->copies[ci];
    if (c.retired()) continue;  // its executable is gone: a recapture's copy took its place
    for (const NodeInfo& n : c.nodes) {
      KernelNodeTime k;
      k.name = n.name;
      k.kernel = n.kernel;
      k.stage = n.stage;
      k.stage_name = n.stage_name;
      k.graph_id = c.graph_id;
      k.node_id = n.node_id;
      k.copy = ci;
      k.index = n.index;
      k.count = n.count;
      k.mean_s = n.count ? n.sum_s / static_cast<double>(n.count) : 0.0;
      k.min_s = n.min_s;
      k.max_s = n.max_s;
      out.push_back(std::move(k));
    }
  }
  return out;
}

std::uint64_t GraphKernelTimer::replays() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->n_replays;
}
std::uint64_t GraphKernelTimer::missed() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->n_missed;
}
std::uint64_t GraphKernelTimer::dropped() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->n_dropped;
}
std::uint64_t GraphKernelTimer::unstamped() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->n_unstamped;
}
double GraphKernelTimer::hop_ns() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->hop_ns;
}
double GraphKernelTimer::clock_error_ns() const noexcept {
  return impl_->clock_error.load(std::memory_order_relaxed);
}
std::uint64_t GraphKernelTimer::trace_dropped() const noexcept {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->trace_lost;
}
void GraphKernelTimer::set_on_replay(std::function<void(const KernelReplay&)> fn) {
  impl_->on_replay = std::move(fn);
}
const GraphKernelTimerOptions& GraphKernelTimer::options() const noexcept { return impl_->options; }

void GraphKernelTimer::bind(const TimeBase& time_base) {
  const std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->window_open)
    throw std::logic_error("simprof: GraphKernelTimer::bind inside a trace window (bind before)");
  impl_->time_base = time_base;
}

// A window's (or warm-up's) first step: the GPU's clock aligned, and from now every step stamped.
// The session starts its sources from its own step begin: where ours ran first, this step is
// stamped here.
void GraphKernelTimer::start() {
  Impl& m = *impl_;
  const detail::OnDevice on_device(m.device_id);
  m.clock_from = m.probe_clock();
  m.clock_to = ClockPoint{};
  const std::lock_guard<std::mutex> lock(m.mu);
  m.window_open = true;
  m.next_generation();
  // Sampled on the usual schedule already, or stamped now.
  if (!m.adopt_sampled_step() && m.begun && !m.sampled && m.options.trace_every_step &&
      !detail::kernel_tracer_window_open())
    m.begin_sample(m.step_now);
}

void GraphKernelTimer::Impl::next_generation() noexcept {
  ++window_gen;
  window_sampled = window_done = window_lost = window_missed = 0;
  traced.clear();
  traced_stamps.clear();
}

bool GraphKernelTimer::Impl::adopt_sampled_step() noexcept {
  if (!(begun && sampled && sampled_step == step_now)) return false;
  sampled_traced = true;
  sampled_gen = window_gen;
  ++window_sampled;
  return true;
}

// The window will not be collected (its session ended, or the timer left it, inside it).
void GraphKernelTimer::abandon() noexcept {
  Impl& m = *impl_;
  const std::lock_guard<std::mutex> lock(m.mu);
  m.window_open = false;
  m.next_generation();  // readings on their way are no window's
}

// The warm-up's replays are not kept; this step is the window's (it was stamped as the warm-up's).
void GraphKernelTimer::discard() {
  Impl& m = *impl_;
  const std::lock_guard<std::mutex> lock(m.mu);
  m.next_generation();
  if (m.sampled_traced) m.adopt_sampled_step();
}

// The window's last step ends: its row goes back now (the session may collect before our own step
// end runs), and later steps are not the window's.
void GraphKernelTimer::stop() {
  Impl& m = *impl_;
  const std::lock_guard<std::mutex> lock(m.mu);
  if (!m.window_open) return;
  if (m.begun && m.sampled && m.sampled_step == m.step_now) m.finish_sample(m.step_now);
  m.window_open = false;
  m.window_cupti = detail::kernel_tracer_window_open();
}

// Waits (never holding the lock) for the window's readings, aligns the clock again, and appends
// the window's spans. On the loop's thread, or on a background session's writer.
std::uint64_t GraphKernelTimer::stop_and_collect(std::vector<Span>& out) {
  Impl& m = *impl_;
  stop();
  const detail::OnDevice on_device(m.device_id);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    std::vector<cudaEvent_t> wait;
    {
      const std::lock_guard<std::mutex> lock(m.mu);
      if (m.window_done >= m.window_sampled) break;
      for (std::size_t i = 0; i < m.options.ring; ++i)
        if (m.pending[i].busy && m.pending[i].traced && m.pending[i].gen == m.window_gen)
          wait.push_back(m.copied[i].get());
      if (wait.empty() && std::chrono::steady_clock::now() > deadline) {
        m.window_lost += m.window_sampled - m.window_done;  // never read back
        m.window_done = m.window_sampled;
        break;
      }
    }
    if (wait.empty()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    for (cudaEvent_t e : wait)
      if (cudaEventSynchronize(e) != cudaSuccess) (void)cudaGetLastError();
    const std::lock_guard<std::mutex> lock(m.mu);
    m.poll_locked();
  }
  m.clock_to = m.probe_clock();
  const std::lock_guard<std::mutex> lock(m.mu);
  std::uint64_t lost = m.window_lost;
  if (m.window_cupti) {
    // CUPTI's records of the window's replays are in the trace: none of ours.
  } else if (!m.clock_from.ok && !m.clock_to.ok) {
    lost += m.traced.size();  // nowhere to put them
    m.say("a trace window's device spans are left out: the GPU's clock could not be aligned");
  } else {
    const std::size_t before = out.size();
    try {
      m.add_spans(out);
    } catch (const std::bad_alloc&) {
      out.resize(before);
      lost += m.traced.size();
    }
  }
  m.clock_error.store(static_cast<double>(std::max(m.clock_from.ok ? m.clock_from.error_ns : 0,
                                                   m.clock_to.ok ? m.clock_to.error_ns : 0)),
                      std::memory_order_relaxed);
  m.trace_lost += lost;
  m.last_window = {m.traced.size(), m.window_missed, lost, m.window_cupti};
  m.traced.clear();
  m.traced_stamps.clear();
  m.window_lost = 0;
  return lost;
}

void GraphKernelTimer::describe(Trace& trace) const {
  const Impl& m = *impl_;
  std::string what;
  {
    const std::lock_guard<std::mutex> lock(impl_->mu);
    const auto& w = m.last_window;
    what = w.cupti ? fmt::format(
                         "{} stamped replays; their device spans are CUPTI's records "
                         "(a kernel tracer traced the window)",
                         w.replays)
                   : fmt::format(
                         "{} stamped replays as device spans (correlation ids from 2^32: no "
                         "launch records), placed within {:.0f} ns; {} steps ran no "
                         "stamped copy; {} replays lost",
                         w.replays, m.clock_error.load(), w.missed, w.lost);
  }
  trace.metadata["graph_kernel_timer"] = what;
  detail::describe_devices(trace, {static_cast<std::uint32_t>(m.device_id)});
}

std::string kernel_table(const GraphKernelTimer& timer, std::size_t top) {
  const std::vector<KernelNodeTime> nodes = timer.nodes();
  struct Group {
    std::string stage;
    double sum_s = 0;
    std::vector<const KernelNodeTime*> kernels;
  };
  std::map<std::string, Group> by_stage;
  double total = 0;
  for (const KernelNodeTime& k : nodes) {
    if (!k.kernel || k.count == 0) continue;
    Group& g = by_stage[k.stage_name];
    g.stage = k.stage_name.empty() ? "(no stage)" : k.stage_name;
    g.sum_s += k.mean_s;
    g.kernels.push_back(&k);
    total += k.mean_s;
  }
  std::vector<Group*> groups;
  for (auto& [name, g] : by_stage) groups.push_back(&g);
  std::sort(groups.begin(), groups.end(), [](const Group* a, const Group* b) {
    return a->sum_s != b->sum_s ? a->sum_s > b->sum_s : a->stage < b->stage;
  });
  std::string out = fmt::format(
      "Kernels of replayed graphs: device time per sampled replay ({} replays; a stamp after every "
      "node, {:.2f} us hop taken off each)\n",
      timer.replays(), timer.hop_ns() * 1e-3);
  out += fmt::format("{:<58} {:>10} {:>9} {:>9} {:>9} {:>7}\n", "stage / kernel", "graph:node",
                     "mean us", "min us", "max us", "share");
  auto cut = [](const std::string& s, std::size_t w) {
    return s.size() <= w ? s : s.substr(0, w - 3) + "...";
  };
  for (Group* g : groups) {
    std::sort(g->kernels.begin(), g->kernels.end(),
              [](const KernelNodeTime* a, const KernelNodeTime* b) {
                return a->mean_s != b->mean_s ? a->mean_s > b->mean_s : a->index < b->index;
              });
    out += fmt::format("{:<58} {:>10} {:>9.2f} {:>9} {:>9} {:>6.1f}%\n", cut(g->stage, 58), "",
                       g->sum_s * 1e6, "", "", total > 0 ? 100 * g->sum_s / total : 0.0);
    double rest = 0;
    std::size_t n_rest = 0;
    for (std::size_t i = 0; i < g->kernels.size(); ++i) {
      const KernelNodeTime& k = *g->kernels[i];
      if (i >= top) {
        rest += k.mean_s;
        ++n_rest;
        continue;
      }
      out += fmt::format("  {:<56} {:>10} {:>9.2f} {:>9.2f} {:>9.2f} {:>6.1f}%\n", cut(k.name, 56),
                         fmt::format("{}:{}", k.graph_id, k.node_id), k.mean_s * 1e6, k.min_s * 1e6,
                         k.max_s * 1e6, total > 0 ? 100 * k.mean_s / total : 0.0);
    }
    if (n_rest)
      out += fmt::format("  {:<56} {:>10} {:>9.2f} {:>9} {:>9} {:>6.1f}%\n",
                         fmt::format("({} more kernels)", n_rest), "", rest * 1e6, "", "",
                         total > 0 ? 100 * rest / total : 0.0);
  }
  if (timer.dropped() || timer.missed() || timer.unstamped())
    out += fmt::format(
        "({} sampled replays left out, {} sampled steps ran no stamped copy, {} graphs "
        "unstamped)\n",
        timer.dropped(), timer.missed(), timer.unstamped());
  return out;
}

}  // namespace simprof::cuda
