// SPDX-License-Identifier: MIT
#include "simprof/cuda/timing/stage_timer.hpp"

#include <cuda.h>  // the driver API's types: cuStreamWriteValue32 is reached through the runtime

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "../cupti/cupti_hub.hpp"  // OwnNodes: the stamps are not the stage's work
#include "simprof/base/clock.hpp"
#include "simprof/base/log.hpp"
#include "simprof/cuda/graphs/instrumentation.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/runtime/handle.hpp"
#include "simprof/cuda/timing/device_clock.cuh"
#include "simprof/profiler/report.hpp"
#include "stage_timer_impl.hpp"

namespace simprof::cuda {

namespace {

using detail::kStageBegin;
using detail::kStageEnd;
using detail::StepRecord;
constexpr unsigned kNotTimed = 0xffffffffu;

// Starts step k's record at time t (once: an eager stamp before a replayed graph may have started
// it).
__device__ void begin_record(StepRecord& r, unsigned k, unsigned long long t) {
  if (r.step == k && r.t_begin != 0) return;
  r.step = k;
  r.count = 0;
  r.overflow = 0;
  r.t_begin = t;
}

// A replayed graph's first node on a stamped copy.
__global__ void begin_kernel(StepRecord* recs, const unsigned* step, unsigned ring) {
  const unsigned long long t = global_timer_ns();
  const unsigned k = *step;
  if (k == kNotTimed) return;
  begin_record(recs[k % ring], k, t);
}

// A programmatic dependent (launch_eager_stamp) runs as soon as it is on the GPU; this waits until
// the work before it on the stream has completed. A kernel launched without the attribute (or on a
// GPU before compute capability 9.0) passes straight through.
__device__ __forceinline__ void wait_for_the_work_before() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// An eager boundary's stamp: the time the stream reached it, stored at the place the host chose;
// the step's first also starts its record (`begin`, tagged `k`). One store: its cost is a stage's.
__global__ void eager_stamp_kernel(unsigned long long* at, StepRecord* begin, unsigned k) {
  wait_for_the_work_before();
  const unsigned long long t = global_timer_ns();
  *at = t;
  if (begin != nullptr) begin_record(*begin, k, t);
}

__global__ void stamp_kernel(detail::StampArgs a) {
  const unsigned long long t = global_timer_ns();
  const unsigned k = *a.step;
  if (k == kNotTimed) return;
  StepRecord& r = a.recs[k % a.ring];
  const unsigned first = atomicAdd(&r.count, static_cast<unsigned>(a.n));
  for (int i = 0; i < a.n; ++i) {
    const unsigned e = first + static_cast<unsigned>(i);
    if (e < DeviceStageTimer::kMaxStamps)
      r.entries[e] = detail::StampEntry{a.stage[i], a.kind[i], t};
    else
      atomicAdd(&r.overflow, 1u);
  }
}

// Opens a hold_kernel's gate in mapped memory (the GPU polls it).
void let_run(unsigned& gate) { reinterpret_cast<volatile unsigned&>(gate) = 1; }

// calibrate()'s stand-in for an engine's kernel: launched as one is, it runs 2 us (long enough for
// a dependent launched after it to be on the GPU when it ends).
__global__ void stand_in_kernel() {
  const unsigned long long t0 = global_timer_ns();
  while (global_timer_ns() - t0 < 2'000) {
  }
}

// Holds the stream for at least `ns`, and until the host sets `go`, but 100 ms at most (a host that
// cannot queue what comes after it is let go, and says so in `gave_up`); once one hold has given
// up, the others do not wait (launches that block until the kernel is done: no host gets there).
__global__ void hold_kernel(unsigned long long ns, const volatile unsigned* go,
                            volatile unsigned* gave_up) {
  const unsigned long long t0 = global_timer_ns();
  for (unsigned long long t = t0;
       t - t0 < ns || (*go == 0 && *gave_up == 0 && t - t0 < 100'000'000ull);
       t = global_timer_ns()) {
  }
  if (*go == 0) *gave_up = 1;
}

constexpr int kPublishThreads = 128;

// On the timer's own stream, after the step ended: copies step `k`'s record (or an empty one, when
// the step stamped nothing) into the mapped mirror.
__global__ void publish_kernel(const StepRecord* recs, StepRecord* mirror, unsigned ring,
                               unsigned long long k, unsigned n_eager) {
  __shared__ unsigned long long t_end;
  if (threadIdx.x == 0) t_end = global_timer_ns();
  __syncthreads();
  const StepRecord& r = recs[k % ring];
  StepRecord& m = mirror[k % ring];
  const bool mine = r.step == static_cast<unsigned>(k) && r.t_begin != 0;
  const unsigned n =
      mine ? (r.count < DeviceStageTimer::kMaxStamps ? r.count : DeviceStageTimer::kMaxStamps) : 0u;
  const unsigned n_e = mine ? n_eager : 0u;
  for (unsigned i = threadIdx.x; i < n; i += blockDim.x) m.entries[i] = r.entries[i];
  for (unsigned i = threadIdx.x; i < n_e; i += blockDim.x) m.eager[i] = r.eager[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    m.step = static_cast<unsigned>(k);
    m.count = n;
    m.eager_count = n_e;
    m.overflow = mine ? r.overflow : 0u;
    m.t_begin = mine ? r.t_begin : 0ull;
    m.t_end = t_end;
    __threadfence_system();  // everything above is visible to the host before `done`
    m.done = k + 1;
  }
}

using WriteValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

// cuStreamWriteValue32 without linking libcuda: the runtime hands out the driver's entry point.
WriteValue32 write_value32() {
  static const auto fn =
      reinterpret_cast<WriteValue32>(detail::driver_entry_point("cuStreamWriteValue32"));
  return fn;
}

// The options, validated; the ring rounded up to a power of two (a replayed graph's stamps find
// their record by the step's low 32 bits modulo the ring, the host by the whole step: the two agree
// only for a ring that divides 2^32).
DeviceStageTimerOptions checked(DeviceStageTimerOptions o) {
  if (o.merge_within_ns < 0)
    throw std::invalid_argument(
        fmt::format("simprof: DeviceStageTimerOptions.merge_within_ns = {} (expected >= 0)",
                    o.merge_within_ns));
  if (o.sample_every < 1)
    throw std::invalid_argument(fmt::format(
        "simprof: DeviceStageTimerOptions.sample_every = {} (expected >= 1)", o.sample_every));
  // Paced, the pacer's times of a step arrive up to max_in_flight + mark_every (2) steps late.
  const std::size_t least =
      o.max_in_flight > 0 ? static_cast<std::size_t>(o.max_in_flight) + 4 : std::size_t{2};
  constexpr std::size_t kMostRing = std::size_t{1} << 20;
  if (o.max_in_flight < 0 || o.ring < least || o.ring > kMostRing)
    throw std::invalid_argument(
        fmt::format("simprof: DeviceStageTimerOptions ring = {} with max_in_flight = {} (expected "
                    "max_in_flight >= 0 and max_in_flight + 4 <= ring <= {}, or ring >= 2 "
                    "unpaced)",
                    o.ring, o.max_in_flight, kMostRing));
  std::size_t ring = 1;
  while (ring < o.ring) ring *= 2;
  o.ring = ring;
  return o;
}

}  // namespace

DeviceStageTimer::Impl::Impl(StepProfiler& profiler, cudaStream_t s, DeviceStageTimerOptions o)
    : prof(profiler),
      stream(s),
      device_id(bind_device(s, "DeviceStageTimer")),
      options(checked(o)),
      mirror(options.ring, cudaHostAllocMapped),
      mirror_view(mirror.device_pointer()),
      records(options.ring),
      step_index(1),
      hook(std::make_shared<Hook>(this)),
      slots(options.ring),
      latest(profiler),
      scratch(profiler) {
  if (write_value32() == nullptr)
    throw CudaError(cudaErrorNotSupported, "cudaGetDriverEntryPointByVersion(cuStreamWriteValue32)",
                    __FILE__, __LINE__);
  // On the timer's stream (a cudaMemset on the default stream is not ordered before a non-blocking
  // stream's work: compute-sanitizer's initcheck saw a reader overtake one); calibrate() syncs it.
  SIMPROF_CUDA_CHECK(cudaMemsetAsync(records.data(), 0, records.bytes(), stream));
  SIMPROF_CUDA_CHECK(  // kNotTimed
      cudaMemsetAsync(step_index.data(), 0xff, step_index.bytes(), stream));
  items.reserve(2 * kMaxStamps + detail::kMaxAliases);
  // Programmatic launches where the GPU has them (9.0 and up) and the stamp's code loaded for it
  // waits for them (compiled for 9.0 and up: PTX of an older target, JIT-compiled, has no wait).
  int major = 0;
  SIMPROF_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_id));
  cudaFuncAttributes stamp_code{};
  SIMPROF_CUDA_CHECK(cudaFuncGetAttributes(&stamp_code, eager_stamp_kernel));
  dependent_launch = major >= 9 && stamp_code.ptxVersion >= 90;
  eager_stamp_ns = calibrate();
  plain_now = true;
  eager_stamp_plain_ns = dependent_launch ? calibrate() : eager_stamp_ns;
  plain_now = false;
  make_publish_graph();
  if (options.max_in_flight > 0) {
    StepPacerOptions po;
    po.max_in_flight = options.max_in_flight;
    po.fps_from_device = options.fps_from_device;
    // Spans on every sampled step (its share's denominator) and one unsampled step between two.
    po.span_every = std::max(1, options.sample_every / 2);
    // Timed end events on the spanned steps only (a timed event costs the GPU a little between two
    // steps, an untimed one nothing): the steps between share their period. The
    // pacer's times arrive up to max_in_flight + mark_every steps late, within the ring.
    const auto room = static_cast<int>(options.ring) - options.max_in_flight - 3;
    po.mark_every = std::max(1, std::min(po.span_every, room));
    pacer.emplace(prof, stream, po);  // registered before this timer: it waits first
    pacer->set_on_step([this](const DeviceStep& d) { device_step(d); });
  }
  attached = prof.attach(*this);  // last: nothing below can throw once the profiler calls us
}

void DeviceStageTimer::Impl::make_publish_graph() {
  SIMPROF_CUDA_CHECK(cudaGraphCreate(publish_graph.out(), 0));
  publish_recs = records.data();
  publish_ring = static_cast<unsigned>(options.ring);
  publish_args[0] = &publish_recs;
  publish_args[1] = &mirror_view;
  publish_args[2] = &publish_ring;
  publish_args[3] = &publish_step;
  publish_args[4] = &publish_eager;
  publish_params.func = reinterpret_cast<void*>(&publish_kernel);
  publish_params.gridDim = dim3(1);
  publish_params.blockDim = dim3(kPublishThreads);
  publish_params.kernelParams = publish_args;
  const cuda::detail::OwnNodes own;  // simprof's node: a kernel tracer gives it no stage
  SIMPROF_CUDA_CHECK(
      cudaGraphAddKernelNode(&publish_node, publish_graph.get(), nullptr, 0, &publish_params));
  SIMPROF_CUDA_CHECK(cudaGraphInstantiate(publish_exec.out(), publish_graph.get(), 0));
}

double DeviceStageTimer::Impl::calibrate() {
  // A stage read as on a sampled eager step, twice over: 8 kernels back to back between a begin
  // and an end stamp, then the same 8 kernels each in a child stage of its own (16 stamps more,
  // two between each two kernels, as between an engine's stages). A sixteenth of the difference
  // is what one eager stamp adds to a stage it sits in; the mean of the middle half of 24 such
  // pairs is taken (neighbours in time: the GPU's clock is the same for both). Each pair is held
  // on the GPU until the host has queued all of it, so that the GPU runs it back to back, not at
  // the host's pace; the first hold lasts 2 ms at least (it brings the SM clock up).
  constexpr int kPairs = 24, kUnits = 8;
  constexpr int kPerPair = 4 + 2 * kUnits;  // stamps: the two stages' bounds, the children's
  DeviceBuffer<unsigned long long> t(kPairs * kPerPair);
  // [p]: pair p may run; [kPairs]: a hold gave up waiting for its pair (100 ms). Zeroed.
  PinnedBuffer<unsigned> gate(kPairs + 1, cudaHostAllocMapped);
  // On every way out (a failed launch throws): no hold left waiting, nothing left running on the
  // buffers about to be freed.
  struct Release {
    const PinnedBuffer<unsigned>& gate;
    cudaStream_t stream;
    ~Release() {
      for (int p = 0; p < kPairs; ++p) let_run(gate[p]);
      cudaStreamSynchronize(stream);
    }
  } release{gate, stream};
  unsigned long long* next = t.data();
  const auto stamp = [&] {
    if (const cudaError_t e = launch_eager_stamp(next++, nullptr, 0); e != cudaSuccess)
      throw CudaError(e, "cudaLaunchKernelEx (an eager stamp, calibrating)", __FILE__, __LINE__);
  };
  const auto kernel = [&] {
    stand_in_kernel<<<1, 1, 0, stream>>>();
    SIMPROF_CUDA_CHECK_LAUNCH("stand_in_kernel");
  };
  for (int p = 0; p < kPairs; ++p) {
    hold_kernel<<<1, 1, 0, stream>>>(p == 0 ? 2'000'000ull : 0ull, gate.device_pointer() + p,
                                     gate.device_pointer() + kPairs);
    SIMPROF_CUDA_CHECK_LAUNCH("hold_kernel");
    stamp();
    for (int k = 0; k < kUnits; ++k) kernel();
    stamp();
    stamp();
    for (int k = 0; k < kUnits; ++k) {
      stamp();
      kernel();
      stamp();
    }
    stamp();
    let_run(gate[p]);
  }
  unsigned long long h[kPairs * kPerPair] = {};
  t.copy_to_host(h, kPairs * kPerPair, stream);
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (gate[kPairs] != 0)
    simprof::default_logger()->warn(
        "simprof: DeviceStageTimer: measuring the eager stamps' cost, the GPU waited 100 ms for "
        "the host to queue its work and then ran at the host's pace (launches that block?): the "
        "cost taken out of eager stage times may be too high");
  double costs[kPairs];
  for (int p = 0; p < kPairs; ++p) {
    const unsigned long long* at = h + p * kPerPair;
    const auto plain = static_cast<double>(at[1] - at[0]);
    const auto staged = static_cast<double>(at[kPerPair - 1] - at[2]);
    costs[p] = (staged - plain) / (2.0 * kUnits);
  }
  std::sort(costs, costs + kPairs);
  double middle = 0;
  for (int p = kPairs / 4; p < kPairs - kPairs / 4; ++p) middle += costs[p];
  return std::max(0.0, middle / (kPairs - 2 * (kPairs / 4)));
}

DeviceStageTimer::Impl::~Impl() {
  hook->detach();  // a cache (or a user) that still holds it launches the plain graph from now on
  attached.detach();
  // Stamps and publications may still be in flight; errors are not thrown here.
  cudaStreamSynchronize(stream);
  cudaStreamSynchronize(side.get());
}

void DeviceStageTimer::Impl::set_stream(cudaStream_t s) noexcept {
  stream = s;
  if (pacer) pacer->set_stream(s);
}

void DeviceStageTimer::Impl::report(const char* what, cudaError_t e) noexcept {
  if (reported) return;
  try {
    report(what, describe(e));
  } catch (...) {
  }
}

void DeviceStageTimer::Impl::report(const char* what, const std::string& why) noexcept {
  if (reported) return;
  reported = true;
  try {
    simprof::default_logger()->error("simprof: DeviceStageTimer: {} failed: {}", what, why);
  } catch (...) {
  }
}

void DeviceStageTimer::Impl::note_unstamped(std::uint64_t step) noexcept {
  ++n_unstamped;
  if (said_unstamped) return;
  said_unstamped = true;
  try {
    simprof::default_logger()->warn(
        "simprof: DeviceStageTimer: sampled step {} ran no stage boundary and no stamped graph, "
        "while earlier steps had stages: a graph replayed without the timer's stamps (or another "
        "tool's copy ran), so its stages are not timed in this step, or a step without stages. "
        "Give the GraphCache the timer's instrumentation() "
        "(cache.attach(timer.instrumentation())), "
        "or use simprof::cuda::GpuProfile, which wires it (said once; counted in unstamped())",
        step);
  } catch (...) {
  }
}

void DeviceStageTimer::Impl::on_step_begin(std::uint64_t step, std::int64_t) {
  began_eagerly = false;
  step_boundaries = step_copy = false;
  step_tag = static_cast<unsigned>(step);
  const bool sampled = step % static_cast<std::uint64_t>(options.sample_every) == 0;
  slot_now = step % options.ring;
  slots[slot_now].stamped = 0;
  skip = true;
  if (!sampled) return;
  if (ended - next_read >= options.ring) poll();
  // Without pacing the GPU can fall a whole ring behind: leave this step untimed rather than wait.
  skip = ended - next_read >= options.ring;
  if (skip) ++dropped;
  slots[slot_now].stamped = !skip;
  if (!skip) {  // the slot's last step is joined or passed over (the ring check above)
    slots[slot_now].eager_stamps = 0;
    slots[slot_now].eager_lost = false;
    slots[slot_now].n_aliases = 0;
  }
  // The step's index, written by the stream itself before the step's work: every stamp of a
  // replayed graph in the step finds its record through it (an eager stamp is told where its time
  // goes).
  const auto value = skip ? kNotTimed : static_cast<unsigned>(step);
  const CUresult r = write_value32()(reinterpret_cast<CUstream>(stream),
                                     reinterpret_cast<CUdeviceptr>(step_index.data()), value, 0);
  if (r != CUDA_SUCCESS) {
    if (reported) return;
    try {
      report("cuStreamWriteValue32", describe_driver(static_cast<int>(r)));
    } catch (...) {
    }
  }
}

void DeviceStageTimer::Impl::on_stage_begin(StageId id, std::int64_t) { boundary(id, kStageBegin); }

void DeviceStageTimer::Impl::on_stage_end(StageId id, std::int64_t) { boundary(id, kStageEnd); }

void DeviceStageTimer::Impl::boundary(StageId stage, int kind) noexcept {
  step_boundaries = true;
  // An unsampled step outside GraphCache's captures: nothing to do, not even a query.
  if (skip && !capturing) return;
  // Right after an eager stamp's launch, outside any capture: that stamp's instant, no query.
  if (!capturing && merged_eager(stage, kind)) return;
  CaptureInfo ci;
  cudaError_t e = capture_info(capturing ? capture_stream : stream, ci);
  if (e != cudaSuccess) return report("cudaStreamGetCaptureInfo", e);
  if (ci.status != cudaStreamCaptureStatusActive) {
    // Eager: on the stream, in order, in sampled steps only.
    if (!skip) eager_stamp(stage, kind);
    return;
  }
  detail::StampArgs a{};
  a.recs = records.data();
  a.step = step_index.data();
  a.ring = static_cast<unsigned>(options.ring);
  a.n = 1;
  a.stage[0] = static_cast<int>(stage);
  a.kind[0] = kind;
  // Captured: noted for the instrumented copy, as a leaf after the work captured so far. A capture
  // is noted whether or not its step is sampled: the copy serves the sampled steps to come.
  detail::CaptureStamps& c = capture;
  try {
    if (c.id != ci.id) {
      c = detail::CaptureStamps{};
      c.id = ci.id;
      c.graph = ci.graph;
    }
    if (!c.stamps.empty()) {
      detail::CaptureStamps::Stamp& last = c.stamps.back();
      if (last.args.n < detail::kPerNode && last.deps.size() == ci.n_deps &&
          std::equal(ci.deps, ci.deps + ci.n_deps, last.deps.begin())) {
        // No work since the last stamp: the same instant, one more entry.
        last.args.stage[last.args.n] = a.stage[0];
        last.args.kind[last.args.n] = kind;
        ++last.args.n;
        return;
      }
    }
    c.stamps.push_back({std::vector<cudaGraphNode_t>(ci.deps, ci.deps + ci.n_deps), a});
  } catch (...) {
    c = detail::CaptureStamps{};  // out of memory: this capture gets no stamps
    report("noting a stamp (out of memory)", cudaErrorMemoryAllocation);
  }
}

// Within merge_within_ns of the latest eager stamp's launch: nothing can have been launched
// between, nor a capture begun; the boundary takes that stamp's instant (joined on the host). The
// clock is read only with merging on.
bool DeviceStageTimer::Impl::merged_eager(StageId stage, int kind) noexcept {
  Slot& s = slots[slot_now];
  if (options.merge_within_ns == 0 || skip || s.eager_stamps == 0 ||
      s.n_aliases >= detail::kMaxAliases ||
      simprof::detail::steady_now_ns() - last_eager_ns >= options.merge_within_ns)
    return false;
  s.aliases[s.n_aliases++] = Alias{s.eager_stamps, static_cast<int>(stage), kind};
  ++n_merged;
  return true;
}

// An eager boundary's own stamp on the stream: its time goes to the step's record at the
// boundary's place among the step's eager stamps, what it marks stays here. The step's first eager
// stamp also starts the record. (The record is the host's slot, as the publication's.)
void DeviceStageTimer::Impl::eager_stamp(StageId stage, int kind) noexcept {
  Slot& s = slots[slot_now];
  if (s.eager_stamps >= kMaxStamps) {
    s.eager_lost = true;  // counted in dropped() when the step is joined
    return;
  }
  detail::StepRecord& r = records.data()[slot_now];
  if (s.eager_stamps == 0) {  // one launch mode for the whole step (its calibrated cost)
    plain_now = detail::kernel_tracer_window_open();
    s.plain = plain_now;
  }
  if (const cudaError_t e =
          launch_eager_stamp(&r.eager[s.eager_stamps], began_eagerly ? nullptr : &r, step_tag);
      e != cudaSuccess) {
    (void)cudaGetLastError();
    s.eager_lost = true;
    report("an eager stamp's cudaLaunchKernelEx", e);
    return;
  }
  began_eagerly = true;
  s.eager_at[s.eager_stamps++] = EagerAt{static_cast<int>(stage), kind};
  if (options.merge_within_ns != 0) last_eager_ns = simprof::detail::steady_now_ns();
}

cudaError_t DeviceStageTimer::Impl::launch_eager_stamp(unsigned long long* at,
                                                       detail::StepRecord* begin,
                                                       unsigned tag) noexcept {
  cudaLaunchAttribute dependent{};
  dependent.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  dependent.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t c{};
  c.gridDim = dim3(1);
  c.blockDim = dim3(1);
  c.stream = stream;
  c.attrs = &dependent;
  c.numAttrs = dependent_launch && !plain_now ? 1 : 0;
  return cudaLaunchKernelEx(&c, eager_stamp_kernel, at, begin, tag);
}

cudaGraph_t DeviceStageTimer::Impl::instrumented_copy(cudaGraph_t graph) noexcept {
  detail::CaptureStamps& c = capture;
  if (graph == nullptr || c.graph != graph || c.stamps.empty()) return nullptr;
  // The stamp nodes are simprof's: a kernel tracer gives them no stage (the copy's clones of the
  // captured nodes keep theirs).
  const cuda::detail::OwnNodes own;
  GraphHandle copy;
  cudaError_t e = cudaGraphClone(copy.out(), graph);
  if (e != cudaSuccess) {
    report("cudaGraphClone", e);
    return nullptr;
  }
  // The captured work's roots, before any stamp is added: the step's first stamps run before them.
  std::vector<cudaGraphNode_t> roots;
  try {
    std::size_t n_roots = 0;
    if ((e = cudaGraphGetRootNodes(copy.get(), nullptr, &n_roots)) == cudaSuccess) {
      roots.resize(n_roots);
      e = cudaGraphGetRootNodes(copy.get(), roots.data(), &n_roots);
      roots.resize(n_roots);
    }
  } catch (...) {
    report("instrumenting a graph (out of memory)", cudaErrorMemoryAllocation);
    return nullptr;
  }
  if (e != cudaSuccess) {
    report("cudaGraphGetRootNodes", e);
    return nullptr;
  }
  cudaKernelNodeParams p{};
  p.gridDim = dim3(1);
  p.blockDim = dim3(1);
  detail::StepRecord* recs = records.data();
  const unsigned* step = step_index.data();
  unsigned ring = static_cast<unsigned>(options.ring);
  void* begin_args[] = {&recs, &step, &ring};
  p.func = reinterpret_cast<void*>(&begin_kernel);
  p.kernelParams = begin_args;
  cudaGraphNode_t begin = nullptr;
  if ((e = cudaGraphAddKernelNode(&begin, copy.get(), nullptr, 0, &p)) != cudaSuccess) {
    report("cudaGraphAddKernelNode", e);
    return nullptr;
  }
  int least_priority = 0, stamp_priority = 0;
  if (cudaDeviceGetStreamPriorityRange(&least_priority, &stamp_priority) != cudaSuccess) {
    (void)cudaGetLastError();
    stamp_priority = 0;
  }
  try {
    std::vector<cudaGraphNode_t> heads;  // the stamps noted before any captured work
    std::vector<cudaGraphNode_t> deps;
    for (detail::CaptureStamps::Stamp& s : c.stamps) {
      deps.clear();
      for (const cudaGraphNode_t d : s.deps) {
        cudaGraphNode_t mine = nullptr;
        if ((e = cudaGraphNodeFindInClone(&mine, d, copy.get())) != cudaSuccess) {
          report("cudaGraphNodeFindInClone", e);
          return nullptr;
        }
        deps.push_back(mine);
      }
      deps.push_back(begin);
      void* args[] = {&s.args};
      p.func = reinterpret_cast<void*>(&stamp_kernel);
      p.kernelParams = args;
      cudaGraphNode_t node = nullptr;
      if ((e = cudaGraphAddKernelNode(&node, copy.get(), deps.data(), deps.size(), &p)) !=
          cudaSuccess) {
        report("cudaGraphAddKernelNode", e);
        return nullptr;
      }
      if (s.deps.empty()) heads.push_back(node);
      // A stamp is a leaf beside the next work: when that work fills the GPU, a stamp of the
      // default priority waits for its blocks to drain (a stage then reads short; docs/python.md).
      // At the greatest priority the block scheduler
      // takes it at the next free slot. A driver that refuses it leaves the stamp as it was.
      if (stamp_priority != 0) {
        cudaKernelNodeAttrValue v{};
        v.priority = stamp_priority;
        if (cudaGraphKernelNodeSetAttribute(node, cudaKernelNodeAttributePriority, &v) !=
            cudaSuccess) {
          (void)cudaGetLastError();  // not left for the next launch check to find
          stamp_priority = 0;        // and not asked again
        }
      }
    }
    // The stamps noted before any captured work (the first stage's begin) come before the graph's
    // roots, not beside them: a root branch of one tiny kernel is not run first, and it can run
    // well into the work it was to mark (the first stage then reads short; docs/python.md).
    if (heads.empty()) heads.push_back(begin);
    for (const cudaGraphNode_t h : heads)
      for (const cudaGraphNode_t r : roots)
#if CUDART_VERSION >= 13000
        if ((e = cudaGraphAddDependencies(copy.get(), &h, &r, nullptr, 1)) != cudaSuccess) {
#else
        if ((e = cudaGraphAddDependencies(copy.get(), &h, &r, 1)) != cudaSuccess) {
#endif
          report("cudaGraphAddDependencies", e);
          return nullptr;
        }
  } catch (...) {
    report("instrumenting a graph (out of memory)", cudaErrorMemoryAllocation);
    return nullptr;
  }
  c = detail::CaptureStamps{};
  return copy.release();
}

void DeviceStageTimer::Impl::on_step_end(std::uint64_t step, std::int64_t, StepOutcome outcome) {
  const std::size_t slot = step % options.ring;
  ended = step + 1;
  if (!skip && !step_boundaries && !step_copy && seen_boundaries &&
      outcome == StepOutcome::kCompleted)
    note_unstamped(step);
  seen_boundaries = seen_boundaries || step_boundaries;
  // An unstamped step leaves the slot alone: it may still hold an unread step's publication.
  if (skip) return;
  slots[slot].completed = outcome == StepOutcome::kCompleted;
  // On the timer's stream once the step's work is done: off the path of the next step.
  cudaError_t e = cudaEventRecord(step_done.get(), stream);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(side.get(), step_done.get(), 0);
  if (e != cudaSuccess) return report("cudaStreamWaitEvent", e);
  publish_step = step;  // the arguments are copied into the executable here
  publish_eager = slots[slot].eager_stamps;
  if ((e = cudaGraphExecKernelNodeSetParams(publish_exec.get(), publish_node, &publish_params)) !=
      cudaSuccess)
    return report("cudaGraphExecKernelNodeSetParams (the publication's step)", e);
  if ((e = cudaGraphLaunch(publish_exec.get(), side.get())) != cudaSuccess)
    return report("the publication's cudaGraphLaunch", e);
  slots[slot].published = step + 1;
  poll();
}

}  // namespace simprof::cuda

namespace simprof::cuda {

DeviceStageTimer::DeviceStageTimer(StepProfiler& prof, cudaStream_t stream,
                                   DeviceStageTimerOptions options)
    : impl_(std::make_unique<Impl>(prof, stream, options)) {}
DeviceStageTimer::~DeviceStageTimer() = default;
std::shared_ptr<GraphInstrumentation> DeviceStageTimer::instrumentation() const noexcept {
  return impl_->hook;
}
void DeviceStageTimer::set_stream(cudaStream_t stream) noexcept { impl_->set_stream(stream); }

}  // namespace simprof::cuda
