// SPDX-License-Identifier: MIT
#include <unistd.h>

#include "../cupti/describe_devices.hpp"
#include "../runtime/on_device.hpp"
#include "kernel_tracer_impl.hpp"

namespace simprof::cuda {

using detail::cupti_error;

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
    if (const CUptiResult r = cuptiActivityRegisterTimestampCallback(detail::tracer_timestamp);
        r != CUPTI_SUCCESS) {
      impl_->disable(
          fmt::format("cuptiActivityRegisterTimestampCallback failed: {}", cupti_error(r)));
      return;
    }
  }
  if (const CUptiResult r = cuptiActivityRegisterCallbacks(detail::tracer_buffer_requested,
                                                           detail::tracer_buffer_completed);
      r != CUPTI_SUCCESS) {
    impl_->disable(fmt::format("cuptiActivityRegisterCallbacks failed: {}", cupti_error(r)));
    return;
  }
  // Without marks a window's end waits for the device on the loop's thread (start() says so).
  impl_->marks =
      detail::enable_correlation_marks(impl_->subscription.handle(), true) == CUPTI_SUCCESS;
  // Graph nodes' stages, from now on (a graph captured before has none): without them the
  // replayed kernels have no "stage", and nothing else changes.
  detail::set_graph_node_handler(detail::tracer_graph_node, impl_.get());
  impl_->graph_nodes =
      detail::enable_graph_nodes(impl_->subscription.handle(), true) == CUPTI_SUCCESS;
  if (!impl_->graph_nodes) detail::set_graph_node_handler(nullptr, nullptr);
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
    detail::set_graph_node_handler(nullptr, nullptr);  // returns once no callback is inside it
  }
  // CUPTI's activity callbacks find no tracer from here on.
  detail::CuptiProcess::get().release_tracer(impl_.get());
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

}  // namespace simprof::cuda