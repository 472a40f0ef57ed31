// SPDX-License-Identifier: MIT
#include "simprof/cuda/trace/kernel_tracer.hpp"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "../cupti/cupti_hub.hpp"
#include "../cupti/describe_devices.hpp"
#include "../runtime/on_device.hpp"
#include "cupti_records.hpp"
#include "simprof/base/log.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/detail/buffer_pool.hpp"

namespace simprof::cuda {

namespace {

using detail::cupti_error;

// CUPTI's callbacks are plain functions without a context argument: they reach the one tracer of
// the process through this pointer, owned by the tracer's Registration.
std::atomic<KernelTracer::Impl*> g_impl{nullptr};
// Tracers with a window open (start() to stop_and_collect(), or until tracing goes off).
std::atomic<int> g_windows_open{0};
// Graph-node callbacks inside the tracer now (they come on any thread that builds a graph): the
// tracer's destructor clears g_impl, then waits for this to reach zero before its Impl goes.
std::atomic<int> g_graph_cb_in_flight{0};

}  // namespace

struct KernelTracer::Impl {
  // Sets g_impl for the tracer's life; a second tracer is refused.
  class Registration {
   public:
    explicit Registration(Impl* self) {
      Impl* expected = nullptr;
      if (!g_impl.compare_exchange_strong(expected, self))
        throw std::logic_error(
            "simprof: a KernelTracer already exists (CUPTI allows one per process)");
    }
    ~Registration() { g_impl.store(nullptr); }
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;
  };

  Impl(const StepProfiler& p, const TimeBase& tb, const KernelTracerOptions& o)
      : options(o),
        time_base(tb),
        pool(o.buffer_bytes, o.max_buffers),
        prof(p),
        loop_thread(std::this_thread::get_id()) {}

  KernelTracerOptions options;
  TimeBase time_base;                // written only while no window is open (bind)
  std::atomic<bool> enabled{false};  // false for good once disable() ran (on either thread)
  std::string reason;                // written before enabled goes false
  // The device's sticky error, seen when a window ended: the window's kernels after the fault were
  // never run, which its trace says (otherData.device_error).
  std::string device_error;
  simprof::detail::BufferPool
      pool;  // lent to CUPTI, returned on its thread (thread-safe on its own)
  // Counted in g_windows_open while a window is open (start() to its collection, or disable()).
  std::atomic<bool> window_counted{false};
  void mark_window(bool open) noexcept {
    if (window_counted.exchange(open) != open) g_windows_open.fetch_add(open ? 1 : -1);
  }
  std::mutex mutex;  // guards everything below: CUPTI completes buffers on its own thread
  bool running = false;
  detail::ActivityRecords records;
  std::uint64_t dropped = 0;
  std::int64_t offset = 0;  // added to CUPTI timestamps when its clock is not the session's
  // The window's launches, between its start's correlation mark and its last step's (all = true
  // when CUPTI gave no marks). Written on the loop's thread; read by stop_and_collect(), which the
  // session runs after stop() (on the writer thread it starts after stop()).
  detail::CorrelationWindow window;
  bool stopped = false;   // stop() ran for the window being collected
  bool kinds_on = false;  // CUPTI's kinds enabled by start() and not yet disabled
  bool warned_unmarked = false;
  bool marks = false;                       // the marker call's callback is on
  int device = 0;                           // the current device when the tracer was made
  std::vector<std::uint32_t> devices_seen;  // in the last window collected
  // The stage each graph node was captured in, by CUPTI's node id: a node made while the loop's
  // thread (the one that made the tracer) has a stage open gets that stage; a clone
  // (cudaGraphClone, and every instantiation, whose nodes are the ones a replayed kernel names) its
  // original's. Written in CUPTI's resource callbacks (at capture and instantiation, never at
  // replay); read when a window is collected.
  const StepProfiler& prof;
  const std::thread::id loop_thread;
  std::mutex nodes_mutex;  // guards node_stage
  std::unordered_map<std::uint64_t, std::string> node_stage;
  std::vector<std::uint64_t> destroyed;  // nodes destroyed since the last collection
  bool graph_nodes = false;              // CUPTI's graph-node callbacks are on

  void forget_destroyed() noexcept {  // under nodes_mutex
    for (const std::uint64_t n : destroyed) node_stage.erase(n);
    destroyed.clear();
  }
  // Declared last: destroyed first, so no callback can reach the members above once they go.
  Registration registration{this};
  detail::CuptiLease subscription;  // CUPTI's one subscriber, shared with DeviceAllocations

  std::vector<CUpti_ActivityKind> kinds() const {
    std::vector<CUpti_ActivityKind> k{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
    if (options.runtime_api) k.push_back(CUPTI_ACTIVITY_KIND_RUNTIME);
    if (options.driver_api) k.push_back(CUPTI_ACTIVITY_KIND_DRIVER);
    if (options.memory) {
      k.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
      k.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
    }
    if (options.synchronization) k.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    if (options.overhead) k.push_back(CUPTI_ACTIVITY_KIND_OVERHEAD);
    return k;
  }

  // CUPTI instruments no further launch (the records of those launched before still come).
  void disable_kinds() {
    for (auto k : kinds()) cuptiActivityDisable(k);
    kinds_on = false;
  }

  // The kinds go off only once the device has run what was launched while they were on: CUPTI
  // disabled with kernels still in flight gives those kernels end times hundreds of microseconds
  // late (the window's last graph launch; docs/tracing.md). Runs on the
  // thread that collects; the work launched after the window meanwhile is traced and left out by
  // its correlation (`window`).
  void drain_and_disable() {
    if (!kinds_on) return;
    if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) {
      device_error = fmt::format("cudaDeviceSynchronize failed: {}", cuda::describe(e));
      default_logger()->error("simprof: kernel tracer: {}", device_error);
    }
    disable_kinds();
  }

  // Off for good, said once; a window running stops collecting (its kinds are the caller's to
  // disable: never CUPTI's, when another tool holds it).
  void disable(std::string why) {
    reason = std::move(why);
    enabled = false;
    mark_window(false);
    {
      std::lock_guard<std::mutex> lock(mutex);
      running = false;
    }
    default_logger()->warn("simprof: kernel tracing is off: {}. The simulation runs on untraced.",
                           reason);
  }
};

namespace {

uint64_t CUPTIAPI timestamp_cb() {
  const KernelTracer::Impl* impl = g_impl.load(std::memory_order_acquire);
  return static_cast<uint64_t>(impl ? impl->time_base.now_ns() : TimeBase().now_ns());
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  *buffer = nullptr;
  *size = 0;
  KernelTracer::Impl* impl = g_impl.load();
  if (!impl) return;
  *buffer = impl->pool.acquire();  // null when all are out: CUPTI drops records and counts them
  if (*buffer) *size = impl->pool.buffer_bytes();
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t,
                               size_t valid) {
  KernelTracer::Impl* impl = g_impl.load();
  if (!impl || !buffer) return;
  std::lock_guard<std::mutex> lock(impl->mutex);
  if (impl->running) {  // a flush outside a window only recycles
    try {
      impl->records.parse(buffer, valid);
    } catch (...) {
      ++impl->dropped;  // nothing may throw into CUPTI; a record that could not be kept is counted
    }
  }
  size_t lost = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &lost) == CUPTI_SUCCESS)
    impl->dropped += lost;
  impl->pool.release(buffer);
}

// CUPTI's graph-node callbacks (detail::set_graph_node_handler): the stage of every node made
// inside a stage on the loop's thread, carried to its clones. Never throws into CUPTI.
void graph_node_cb(CUpti_CallbackDomain, CUpti_CallbackId id, const void* data) {
  struct InFlight {  // counted before g_impl is read (seq_cst): see ~KernelTracer
    InFlight() { g_graph_cb_in_flight.fetch_add(1); }
    ~InFlight() { g_graph_cb_in_flight.fetch_sub(1); }
  } in_flight;
  KernelTracer::Impl* impl = g_impl.load();
  if (impl == nullptr || data == nullptr) return;
  const auto* rd = static_cast<const CUpti_ResourceData*>(data);
  const auto* gd = static_cast<const CUpti_GraphData*>(rd->resourceDescriptor);
  std::uint64_t node = 0;
  if (gd == nullptr || gd->node == nullptr || cuptiGetGraphNodeId(gd->node, &node) != CUPTI_SUCCESS)
    return;
  try {
    if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
      // A clone's node (an instantiation's, a cudaGraphClone's) takes its original's stage in
      // the CLONED callback, not the stage open when it was made.
      if (gd->originalNode != nullptr || gd->graphExec != nullptr) return;
      if (std::this_thread::get_id() != impl->loop_thread || detail::OwnNodes::active()) return;
      const StageId stage = impl->prof.innermost_stage();
      if (stage == kNoStage) return;
      std::string name(impl->prof.stage_name(stage));
      std::lock_guard<std::mutex> lock(impl->nodes_mutex);
      impl->node_stage[node] = std::move(name);
    } else if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
      std::uint64_t original = 0;
      if (gd->originalNode == nullptr ||
          cuptiGetGraphNodeId(gd->originalNode, &original) != CUPTI_SUCCESS)
        return;
      std::lock_guard<std::mutex> lock(impl->nodes_mutex);
      if (const auto it = impl->node_stage.find(original); it != impl->node_stage.end())
        impl->node_stage[node] = it->second;
      else
        impl->node_stage.erase(node);
    } else if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING) {
      // Forgotten after the next window is collected: its kernels may be in a window that a
      // session's writer thread has yet to collect (ids are never reused). Beyond 65,536
      // waiting, forgotten now.
      std::lock_guard<std::mutex> lock(impl->nodes_mutex);
      if (impl->node_stage.count(node) == 0) return;
      impl->destroyed.push_back(node);
      if (impl->destroyed.size() > (std::size_t{1} << 16)) impl->forget_destroyed();
    }
  } catch (...) {  // out of memory: that node's kernels have no stage
  }
}

}  // namespace

KernelTracer::KernelTracer(const StepProfiler& prof, KernelTracerOptions options)
    : impl_(std::make_unique<Impl>(prof, TimeBase(prof.clock()), options)) {
  if (cudaGetDevice(&impl_->device) != cudaSuccess) {
    cudaGetLastError();
    impl_->device = 0;
  }
  if (impl_->subscription.result() != CUPTI_SUCCESS) {
    impl_->disable(impl_->subscription.failure());
    return;
  }
  if (options.align_clock) {
    if (const CUptiResult r = cuptiActivityRegisterTimestampCallback(timestamp_cb);
        r != CUPTI_SUCCESS) {
      impl_->disable(
          fmt::format("cuptiActivityRegisterTimestampCallback failed: {}", cupti_error(r)));
      return;
    }
  }
  if (const CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
      r != CUPTI_SUCCESS) {
    impl_->disable(fmt::format("cuptiActivityRegisterCallbacks failed: {}", cupti_error(r)));
    return;
  }
  // Without marks a window's end waits for the device on the loop's thread (start() says so).
  impl_->marks =
      detail::enable_correlation_marks(impl_->subscription.handle(), true) == CUPTI_SUCCESS;
  // Graph nodes' stages, from now on (a graph captured before has none): without them the
  // replayed kernels have no "stage", and nothing else changes.
  detail::set_graph_node_handler(graph_node_cb);
  impl_->graph_nodes =
      detail::enable_graph_nodes(impl_->subscription.handle(), true) == CUPTI_SUCCESS;
  if (!impl_->graph_nodes) detail::set_graph_node_handler(nullptr);
  // Launches on the thread ids the profiler's CPU stages carry (gettid), as Kineto sets it.
  if (const CUptiResult r = cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
      r != CUPTI_SUCCESS) {
    impl_->disable(fmt::format("cuptiSetThreadIdType failed: {}", cupti_error(r)));
    return;
  }
  impl_->enabled = true;
}

KernelTracer::~KernelTracer() {
  impl_->mark_window(false);
  if (impl_->enabled) {
    impl_->disable_kinds();
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  // CUPTI's clock back to its own for whoever traces next in this process (torch.profiler, say).
  if (impl_->options.align_clock && impl_->subscription.result() == CUPTI_SUCCESS)
    cuptiActivityRegisterTimestampCallback(nullptr);
  if (impl_->marks) detail::enable_correlation_marks(impl_->subscription.handle(), false);
  if (impl_->graph_nodes) {
    detail::enable_graph_nodes(impl_->subscription.handle(), false);
    detail::set_graph_node_handler(nullptr);
  }
  // A graph-node callback already running on another thread read g_impl before this store (then
  // it is counted) or reads null after it: the Impl goes only once none is left inside.
  g_impl.store(nullptr);
  while (g_graph_cb_in_flight.load() != 0) std::this_thread::yield();
}

bool KernelTracer::enabled() const noexcept { return impl_->enabled; }
const std::string& KernelTracer::disabled_reason() const noexcept { return impl_->reason; }
std::uint64_t KernelTracer::dropped() const noexcept {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->dropped;
}

void KernelTracer::bind(const TimeBase& time_base) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (impl_->running)
    throw std::logic_error("simprof: KernelTracer::bind inside a trace window (bind before)");
  impl_->time_base = time_base;
}

void KernelTracer::start() {
  if (!impl_->enabled) return;
  if (!impl_->options.align_clock) {
    uint64_t cupti_now = 0;
    cuptiGetTimestamp(&cupti_now);
    impl_->offset = impl_->time_base.now_ns() - static_cast<std::int64_t>(cupti_now);
  }
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->records.clear();
    impl_->running = true;
  }
  impl_->kinds_on = true;
  for (auto k : impl_->kinds())
    if (const CUptiResult r = cuptiActivityEnable(k); r != CUPTI_SUCCESS) {
      impl_->disable(
          fmt::format("cuptiActivityEnable({}) failed: {}", static_cast<int>(k), cupti_error(r)));
      impl_->disable_kinds();
      return;
    }
  // The window's first mark, once CUPTI numbers launches: what ran before is not the window's.
  impl_->stopped = false;
  impl_->window = detail::CorrelationWindow{};
  impl_->window.after = impl_->marks ? detail::correlation_mark() : 0;
  impl_->window.all = impl_->window.after == 0;
  impl_->window.from_ns = impl_->time_base.now_ns();
  impl_->mark_window(true);
  if (impl_->window.all && !impl_->warned_unmarked) {
    impl_->warned_unmarked = true;
    default_logger()->warn(
        "simprof: kernel tracer: CUPTI numbered no marker call, so a window's end waits for the "
        "device on the loop's thread");
  }
}

void KernelTracer::discard() {
  if (!impl_->enabled) return;
  if (const CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      r != CUPTI_SUCCESS) {
    impl_->disable(fmt::format("cuptiActivityFlushAll failed: {}", cupti_error(r)));
    impl_->disable_kinds();
  }
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->records.clear();
  }
  // The warm-up's kernels still running are reported later: the window starts at this mark.
  if (!impl_->window.all)
    if (const std::uint32_t m = detail::correlation_mark(); m != 0) {
      impl_->window.after = m;
      impl_->window.from_ns = impl_->time_base.now_ns();
    }
}

// The window's last step ended: its last launch is marked, and the loop goes on without waiting.
// The window ends at that launch, not when the device catches up; CUPTI's kinds stay on until
// stop_and_collect() has waited for the device (see drain_and_disable()). Without marks the
// window's end waits for the device here, on the loop's thread.
void KernelTracer::stop() {
  if (!impl_->enabled || impl_->stopped) return;
  impl_->stopped = true;
  if (!impl_->window.all) {
    impl_->window.before = detail::correlation_mark();
    impl_->window.until_ns = impl_->time_base.now_ns();
    if (impl_->window.before != 0) return;
    impl_->window.all = true;
  }
  impl_->drain_and_disable();
}

std::uint64_t KernelTracer::stop_and_collect(std::vector<Span>& out) {
  if (!impl_->enabled) return 0;
  stop();
  const detail::OnDevice on_device(impl_->device);
  // The window's kernels must have finished before CUPTI can report them.
  impl_->drain_and_disable();
  // CUPTI lost inside the window: what it delivered before is kept, the rest of this and every
  // later window goes untraced, said once (and in each trace's otherData, by describe()).
  if (const CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
      r != CUPTI_SUCCESS)
    impl_->disable(fmt::format("cuptiActivityFlushAll failed: {}", cupti_error(r)));
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->running = false;
  impl_->stopped = false;
  impl_->mark_window(false);
  {
    std::lock_guard<std::mutex> nodes(impl_->nodes_mutex);  // order: mutex, then nodes_mutex
    impl_->records.to_spans(impl_->options.mode, impl_->window, impl_->offset,
                            static_cast<std::int64_t>(::getpid()), impl_->device, out,
                            &impl_->node_stage);
    impl_->forget_destroyed();
  }
  impl_->devices_seen = impl_->records.devices(impl_->window);
  impl_->records.clear();
  const std::uint64_t lost = impl_->dropped;
  impl_->dropped = 0;
  return lost;
}

void KernelTracer::abandon() noexcept { impl_->mark_window(false); }

void KernelTracer::describe(Trace& trace) const {
  if (!impl_->enabled) trace.metadata["kernel_tracing"] = "off: " + impl_->reason;
  if (!impl_->device_error.empty()) trace.metadata["device_error"] = impl_->device_error;
  std::vector<std::uint32_t> devices;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    devices = impl_->devices_seen;
  }
  if (devices.empty()) devices.push_back(static_cast<std::uint32_t>(impl_->device));
  detail::describe_devices(trace, devices);
}

bool detail::kernel_tracer_window_open() noexcept { return g_windows_open.load() > 0; }

}  // namespace simprof::cuda
