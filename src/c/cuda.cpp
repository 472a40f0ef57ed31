// SPDX-License-Identifier: MIT
// The C API's CUDA room: the CUPTI kernel tracer as a trace session's source, NVTX ranges for the
// profiler's stages, the step pacer, the device stage timer (with stamped copies of graphs other
// frameworks capture), the stopwatch and the device memory tracker. Compiled only where the CUDA
// backend is built (src/c/CMakeLists.txt); cuda_unavailable.cpp answers the same calls otherwise.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "c_api_internal.hpp"
#include "cuda_internal.hpp"
#include "simprof/cuda/graphs/foreign_graph.hpp"
#include "simprof/cuda/memory/device_allocations.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/kernel_timer.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"
#include "simprof/cuda/timing/step_pacer.hpp"
#include "simprof/cuda/timing/stopwatch.hpp"
#include "simprof/cuda/trace/kernel_tracer.hpp"
#include "simprof/cuda/trace/nvtx.hpp"
#include "simprof/memory/tracker.hpp"

using simprof::c_api::checked_stream;
using simprof::c_api::copy_out;
using simprof::c_api::fail;
using simprof::c_api::guarded;

namespace {

// One DeviceAllocations per process (it holds CUPTI's callbacks), shared by the trackers alive.
std::shared_ptr<simprof::cuda::DeviceAllocations> shared_device_allocations() {
  static std::mutex m;
  static std::weak_ptr<simprof::cuda::DeviceAllocations> alive;
  const std::lock_guard<std::mutex> lock(m);
  auto p = alive.lock();
  if (!p) {
    p = std::make_shared<simprof::cuda::DeviceAllocations>();
    alive = p;
  }
  return p;
}

}  // namespace

struct simprof_kernel_tracer {
  simprof::cuda::KernelTracer tracer;
  simprof::SourceRegistration joined;  // after the tracer: leaves the session before it goes
  simprof_kernel_tracer(const simprof::StepProfiler& p, const simprof::cuda::KernelTracerOptions& o)
      : tracer(p, o) {}
};
struct simprof_nvtx {
  simprof::cuda::NvtxRanges ranges;
  explicit simprof_nvtx(simprof::StepProfiler& p) : ranges(p) {}
};
struct simprof_step_pacer {
  simprof::cuda::StepPacer pacer;
};
struct simprof_stage_timer {
  simprof::cuda::DeviceStageTimer timer;
  std::optional<simprof::cuda::ForeignCapture> capture;  // a framework's capture being noted
  simprof::c_api::TimingPairs timings;                   // the latest timings_count
  simprof_stage_timer(simprof::StepProfiler& p, cudaStream_t s,
                      const simprof::cuda::DeviceStageTimerOptions& o)
      : timer(p, s, o) {}
};

struct simprof_kernel_timer {
  simprof::cuda::GraphKernelTimer timer;
  std::optional<simprof::cuda::ForeignCapture> capture;  // a framework's capture being noted
  std::vector<simprof::cuda::KernelNodeTime> nodes;      // the latest nodes_count
  simprof::SourceRegistration joined;  // after the timer: leaves the session before it goes
  simprof_kernel_timer(simprof::StepProfiler& p, cudaStream_t s,
                       const simprof::cuda::GraphKernelTimerOptions& o)
      : timer(p, s, o) {}
};
struct simprof_stopwatch {
  simprof::cuda::Stopwatch watch;
};
struct simprof_memory_tracker {
  std::shared_ptr<simprof::cuda::DeviceAllocations> device;
  simprof::MemoryTracker tracker;
  simprof::SourceRegistration joined;  // after the tracker: leaves the session before it goes
  std::string first_stage;             // the latest simprof_memory_tracker_state
  simprof_memory_tracker(simprof::StepProfiler& p,
                         std::shared_ptr<simprof::cuda::DeviceAllocations> d,
                         const simprof::MemoryOptions& o)
      : device(std::move(d)), tracker(p, device.get(), nullptr, o) {}
};

namespace {

// A framework's capture noted for a tool (the stage timer's, the kernel timer's), and the tool's
// stamped copy of the graph it produced.
template <class T>
simprof_status capture_begin(T* t, const char* who, void* capture_stream) {
  return guarded([&] {
    if (t->capture)
      throw std::logic_error(
          fmt::format("simprof: {}: a capture is already being noted (end it first)", who));
    // No checked_stream() here: CUDA refuses cudaStreamGetDevice while a stream captures in
    // global mode (and invalidates the capture); ForeignCapture asks cudaStreamIsCapturing.
    t->capture.emplace(t->timer.instrumentation(), static_cast<cudaStream_t>(capture_stream));
  });
}

template <class T>
simprof_status capture_end(T* t, const char* who) {
  if (!t->capture)
    return fail(SIMPROF_LOGIC_ERROR,
                fmt::format("simprof: {}: capture_end without capture_begin", who));
  t->capture.reset();
  return SIMPROF_OK;
}

template <class T>
simprof_status stamped_copy(T* t, void* graph, simprof_stamped_graph** out) {
  *out = nullptr;
  return guarded([&] {
    std::vector<simprof::cuda::InstrumentedGraph> one;
    one.emplace_back(t->timer.instrumentation(), static_cast<cudaGraph_t>(graph));
    *out = new simprof_stamped_graph{simprof::cuda::ProfiledGraph(std::move(one))};
  });
}

}  // namespace

extern "C" {

simprof_status simprof_kernel_tracer_new(simprof_profiler* p, simprof_trace* t, int flags,
                                         simprof_kernel_tracer** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(t, "trace");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    simprof::cuda::KernelTracerOptions o;
    if (flags < 0 || flags > 255)
      throw std::invalid_argument("simprof: kernel tracer flags = " + std::to_string(flags) +
                                  " (expected a combination of the SIMPROF_TRACE_* flags, 0-255)");
    if (flags & SIMPROF_TRACE_CUPTI_CLOCK) o.align_clock = false;
    o.mode = (flags & SIMPROF_TRACE_GRAPH_LAUNCHES) ? simprof::cuda::TraceMode::kGraphLaunch
                                                    : simprof::cuda::TraceMode::kPerKernel;
    if (flags & SIMPROF_TRACE_KERNELS_ONLY)
      o.runtime_api = o.driver_api = o.memory = o.synchronization = o.overhead = false;
    if (flags & SIMPROF_TRACE_NO_RUNTIME) o.runtime_api = false;
    if (flags & SIMPROF_TRACE_NO_DRIVER) o.driver_api = false;
    if (flags & SIMPROF_TRACE_NO_COPIES) o.memory = false;
    if (flags & SIMPROF_TRACE_NO_SYNCS) o.synchronization = false;
    if (flags & SIMPROF_TRACE_OVERHEAD) o.overhead = true;
    auto k = std::make_unique<simprof_kernel_tracer>(p->prof, o);
    k->joined = t->session.add_source(&k->tracer);
    *out = k.release();
  });
}

void simprof_kernel_tracer_free(simprof_kernel_tracer* tracer) { delete tracer; }

int simprof_kernel_tracer_enabled(const simprof_kernel_tracer* k) {
  return k && k->tracer.enabled() ? 1 : 0;
}

const char* simprof_kernel_tracer_reason(const simprof_kernel_tracer* k) {
  return k ? k->tracer.disabled_reason().c_str() : "";
}

uint64_t simprof_kernel_tracer_dropped(const simprof_kernel_tracer* k) {
  return k ? k->tracer.dropped() : 0;
}

simprof_status simprof_nvtx_new(simprof_profiler* p, simprof_nvtx** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] { *out = new simprof_nvtx(p->prof); });
}

void simprof_nvtx_free(simprof_nvtx* nvtx) { delete nvtx; }

simprof_status simprof_stream_check(void* stream, int* device) {
  return guarded([&] { checked_stream(stream, "stream", device); });
}

// --- the step pacer ------------------------------------------------------------------------------

simprof_status simprof_step_pacer_new(simprof_profiler* p, void* stream, int max_in_flight,
                                      int mark_every, int span_every, int fps_from_device,
                                      simprof_step_pacer** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    simprof::cuda::StepPacerOptions o;
    o.max_in_flight = max_in_flight;
    o.mark_every = mark_every;
    o.span_every = span_every;
    o.fps_from_device = fps_from_device != 0;
    *out = new simprof_step_pacer{
        simprof::cuda::StepPacer(p->prof, checked_stream(stream, "StepPacer"), o)};
  });
}

void simprof_step_pacer_free(simprof_step_pacer* pacer) { delete pacer; }

simprof_status simprof_step_pacer_finish(simprof_step_pacer* k) {
  SIMPROF_C_REQUIRE(k, "step pacer");
  return guarded([&] { k->pacer.finish(); });
}

simprof_status simprof_step_pacer_counters(const simprof_step_pacer* k,
                                           simprof_pacer_counters* out) {
  SIMPROF_C_REQUIRE(k, "step pacer");
  SIMPROF_C_REQUIRE(out, "out");
  const simprof::cuda::StepPacerCounters& c = k->pacer.counters();
  *out = simprof_pacer_counters{c.steps, c.waits, c.wait_s, c.most_in_flight};
  return SIMPROF_OK;
}

simprof_status simprof_step_pacer_device_steps(const simprof_step_pacer* k,
                                               simprof_device_steps* out) {
  SIMPROF_C_REQUIRE(k, "step pacer");
  SIMPROF_C_REQUIRE(out, "out");
  const simprof::DeviceSteps& d = k->pacer.device_steps();
  *out = simprof_device_steps{d.steps(),   d.completed(),   d.missed(),
                              d.periods(), d.mean_step_s(), d.mean_period_s()};
  return SIMPROF_OK;
}

// --- the device stage timer ----------------------------------------------------------------------

simprof_status simprof_stage_timer_new(simprof_profiler* p, void* stream, int sample_every,
                                       int max_in_flight, size_t ring, int fps_from_device,
                                       simprof_stage_timer** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    simprof::cuda::DeviceStageTimerOptions o;
    o.sample_every = sample_every;
    o.max_in_flight = max_in_flight;
    if (ring != 0) o.ring = ring;
    o.fps_from_device = fps_from_device != 0;
    *out = new simprof_stage_timer(p->prof, checked_stream(stream, "DeviceStageTimer"), o);
  });
}

void simprof_stage_timer_free(simprof_stage_timer* timer) { delete timer; }

simprof_status simprof_stage_timer_set_stream(simprof_stage_timer* t, void* stream) {
  SIMPROF_C_REQUIRE(t, "stage timer");
  return guarded([&] {
    int device = 0;
    const cudaStream_t s = checked_stream(stream, "DeviceStageTimer.set_stream", &device);
    if (device != t->timer.device())
      throw std::invalid_argument(fmt::format(
          "simprof: DeviceStageTimer.set_stream: stream {} is on device {}, the timer on {}",
          stream, device, t->timer.device()));
    t->timer.set_stream(s);
  });
}

simprof_status simprof_stage_timer_poll(simprof_stage_timer* t) {
  SIMPROF_C_REQUIRE(t, "stage timer");
  t->timer.poll();
  return SIMPROF_OK;
}

simprof_status simprof_stage_timer_synchronize(simprof_stage_timer* t) {
  SIMPROF_C_REQUIRE(t, "stage timer");
  return guarded([&] { t->timer.synchronize(); });
}

simprof_status simprof_stage_timer_timings_count(simprof_stage_timer* t, size_t* count) {
  SIMPROF_C_REQUIRE(t, "stage timer");
  SIMPROF_C_REQUIRE(count, "count");
  return simprof::c_api::copy_timings(t->timer.device_timings(), t->timings, count);
}

simprof_status simprof_stage_timer_timings_get(const simprof_stage_timer* t, size_t index,
                                               const char** name, double* seconds) {
  SIMPROF_C_REQUIRE(t, "stage timer");
  return simprof::c_api::timing_at(t->timings, index, name, seconds,
                                   "simprof_stage_timer_timings_count");
}

simprof_status simprof_stage_timer_mean(const simprof_stage_timer* t, const char* stage,
                                        int sampled, double* seconds) {
  SIMPROF_C_REQUIRE(t, "stage timer");
  SIMPROF_C_REQUIRE(stage, "stage name");
  SIMPROF_C_REQUIRE(seconds, "seconds");
  *seconds = sampled ? t->timer.sampled_mean(std::string_view(stage))
                     : t->timer.mean(std::string_view(stage));
  return SIMPROF_OK;
}

uint64_t simprof_stage_timer_joined(const simprof_stage_timer* t) {
  return t ? t->timer.joined() : 0;
}
uint64_t simprof_stage_timer_dropped(const simprof_stage_timer* t) {
  return t ? t->timer.dropped() : 0;
}
uint64_t simprof_stage_timer_unpaired(const simprof_stage_timer* t) {
  return t ? t->timer.unpaired() : 0;
}

uint64_t simprof_stage_timer_unstamped(const simprof_stage_timer* t) {
  return t ? t->timer.unstamped() : 0;
}

simprof_status simprof_device_stage_table(const simprof_profiler* p, const simprof_stage_timer* t,
                                          char* buf, size_t cap, size_t* needed) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(t, "stage timer");
  return guarded(
      [&] { copy_out(simprof::cuda::device_stage_table(p->prof, t->timer), buf, cap, needed); });
}

simprof_status simprof_stage_timer_capture_begin(simprof_stage_timer* t, void* capture_stream) {
  SIMPROF_C_REQUIRE(t, "stage timer");
  return capture_begin(t, "DeviceStageTimer", capture_stream);
}

simprof_status simprof_stage_timer_capture_end(simprof_stage_timer* t) {
  SIMPROF_C_REQUIRE(t, "stage timer");
  return capture_end(t, "DeviceStageTimer");
}

simprof_status simprof_stamped_graph_new(simprof_stage_timer* t, void* graph,
                                         simprof_stamped_graph** out) {
  SIMPROF_C_REQUIRE(t, "stage timer");
  SIMPROF_C_REQUIRE(out, "out");
  return stamped_copy(t, graph, out);
}

void simprof_stamped_graph_free(simprof_stamped_graph* graph) { delete graph; }

simprof_status simprof_stamped_graph_launch(simprof_stamped_graph* g, void* stream, int* launched) {
  SIMPROF_C_REQUIRE(g, "stamped graph");
  SIMPROF_C_REQUIRE(launched, "launched");
  *launched = 0;
  return guarded([&] { *launched = g->graph.launch(static_cast<cudaStream_t>(stream)) ? 1 : 0; });
}

int simprof_stamped_graph_instrumented(const simprof_stamped_graph* g) {
  return g && g->graph.instrumented() ? 1 : 0;
}

uint64_t simprof_stamped_graph_launches(const simprof_stamped_graph* g) {
  return g ? g->graph.launches() : 0;
}

// --- the graph kernel timer ----------------------------------------------------------------------

simprof_status simprof_kernel_timer_new(simprof_profiler* p, void* stream, int sample_every,
                                        int sample_offset, size_t ring, size_t max_stamps,
                                        simprof_kernel_timer** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    simprof::cuda::GraphKernelTimerOptions o;
    o.sample_every = sample_every;
    o.sample_offset = sample_offset;
    if (ring != 0) o.ring = ring;
    if (max_stamps != 0) o.max_stamps = max_stamps;
    *out = new simprof_kernel_timer(p->prof, checked_stream(stream, "GraphKernelTimer"), o);
  });
}

void simprof_kernel_timer_free(simprof_kernel_timer* timer) { delete timer; }

simprof_status simprof_kernel_timer_join(simprof_kernel_timer* t, simprof_trace* trace) {
  SIMPROF_C_REQUIRE(t, "timer");
  SIMPROF_C_REQUIRE(trace, "trace");
  return guarded([&] {
    if (t->joined.active())
      throw std::logic_error("simprof: simprof_kernel_timer_join: the timer is in a trace already");
    t->joined = trace->session.add_source(&t->timer);
  });
}

simprof_status simprof_kernel_timer_poll(simprof_kernel_timer* t) {
  SIMPROF_C_REQUIRE(t, "kernel timer");
  t->timer.poll();
  return SIMPROF_OK;
}

simprof_status simprof_kernel_timer_synchronize(simprof_kernel_timer* t) {
  SIMPROF_C_REQUIRE(t, "kernel timer");
  return guarded([&] { t->timer.synchronize(); });
}

simprof_status simprof_kernel_timer_capture_begin(simprof_kernel_timer* t, void* capture_stream) {
  SIMPROF_C_REQUIRE(t, "kernel timer");
  return capture_begin(t, "GraphKernelTimer", capture_stream);
}

simprof_status simprof_kernel_timer_capture_end(simprof_kernel_timer* t) {
  SIMPROF_C_REQUIRE(t, "kernel timer");
  return capture_end(t, "GraphKernelTimer");
}

simprof_status simprof_kernel_timer_stamp(simprof_kernel_timer* t, void* graph,
                                          simprof_stamped_graph** out) {
  SIMPROF_C_REQUIRE(t, "kernel timer");
  SIMPROF_C_REQUIRE(out, "out");
  return stamped_copy(t, graph, out);
}

simprof_status simprof_kernel_timer_nodes_count(simprof_kernel_timer* t, size_t* count) {
  SIMPROF_C_REQUIRE(t, "kernel timer");
  SIMPROF_C_REQUIRE(count, "count");
  return guarded([&] {
    t->nodes = t->timer.nodes();
    *count = t->nodes.size();
  });
}

simprof_status simprof_kernel_timer_node(const simprof_kernel_timer* t, size_t index,
                                         simprof_kernel_node* out) {
  SIMPROF_C_REQUIRE(t, "kernel timer");
  SIMPROF_C_REQUIRE(out, "out");
  if (index >= t->nodes.size())
    return fail(SIMPROF_INVALID_ARGUMENT, fmt::format("simprof: kernel timer node {} of {} (call "
                                                      "simprof_kernel_timer_nodes_count first)",
                                                      index, t->nodes.size())
                                              .c_str());
  const simprof::cuda::KernelNodeTime& k = t->nodes[index];
  *out = simprof_kernel_node{k.name.c_str(),   k.stage_name.c_str(),
                             k.kernel ? 1 : 0, k.graph_id,
                             k.node_id,        k.copy,
                             k.index,          k.count,
                             k.mean_s,         k.min_s,
                             k.max_s};
  return SIMPROF_OK;
}

simprof_status simprof_kernel_timer_counters_get(const simprof_kernel_timer* t,
                                                 simprof_kernel_timer_counters* out) {
  SIMPROF_C_REQUIRE(t, "kernel timer");
  SIMPROF_C_REQUIRE(out, "out");
  *out = simprof_kernel_timer_counters{t->timer.replays(), t->timer.missed(), t->timer.dropped(),
                                       t->timer.unstamped(), t->timer.hop_ns()};
  return SIMPROF_OK;
}

simprof_status simprof_kernel_table(const simprof_kernel_timer* t, size_t top, char* buf,
                                    size_t cap, size_t* needed) {
  SIMPROF_C_REQUIRE(t, "kernel timer");
  return guarded([&] { copy_out(simprof::cuda::kernel_table(t->timer, top), buf, cap, needed); });
}

// --- the stopwatch -------------------------------------------------------------------------------

simprof_status simprof_stopwatch_new(void* stream, int clock, int pending,
                                     simprof_stopwatch** out) {
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    if (clock != SIMPROF_CLOCK_DEVICE && clock != SIMPROF_CLOCK_HOST_DRAINED)
      throw std::invalid_argument(
          fmt::format("simprof: stopwatch clock = {} (expected SIMPROF_CLOCK_DEVICE (0) or "
                      "SIMPROF_CLOCK_HOST_DRAINED (1))",
                      clock));
    const auto c = clock == SIMPROF_CLOCK_DEVICE ? simprof::cuda::StopwatchClock::kDevice
                                                 : simprof::cuda::StopwatchClock::kHostDrained;
    *out = new simprof_stopwatch{
        simprof::cuda::Stopwatch(checked_stream(stream, "Stopwatch"), c, pending)};
  });
}

void simprof_stopwatch_free(simprof_stopwatch* watch) { delete watch; }

simprof_status simprof_stopwatch_start(simprof_stopwatch* w) {
  SIMPROF_C_REQUIRE(w, "stopwatch");
  return guarded([&] { w->watch.start(); });
}

simprof_status simprof_stopwatch_stop(simprof_stopwatch* w) {
  SIMPROF_C_REQUIRE(w, "stopwatch");
  return guarded([&] { w->watch.stop(); });
}

simprof_status simprof_stopwatch_seconds(simprof_stopwatch* w, double* last_s, double* total_s,
                                         double* mean_s) {
  SIMPROF_C_REQUIRE(w, "stopwatch");
  return guarded([&] {
    if (last_s) *last_s = w->watch.last_s();
    if (total_s) *total_s = w->watch.total_s();
    if (mean_s) *mean_s = w->watch.mean_s();
  });
}

uint64_t simprof_stopwatch_laps(const simprof_stopwatch* w) { return w ? w->watch.laps() : 0; }

simprof_status simprof_stopwatch_reset(simprof_stopwatch* w) {
  SIMPROF_C_REQUIRE(w, "stopwatch");
  return guarded([&] { w->watch.reset(); });
}

const char* simprof_stopwatch_clock_label(const simprof_stopwatch* w) {
  return w ? w->watch.clock_label() : "";
}

// --- the memory tracker --------------------------------------------------------------------------

simprof_status simprof_memory_tracker_new(simprof_profiler* p, simprof_trace* t,
                                          uint64_t warmup_steps, simprof_memory_tracker** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    simprof::MemoryOptions o;
    o.warmup_steps = warmup_steps;
    auto m = std::make_unique<simprof_memory_tracker>(p->prof, shared_device_allocations(), o);
    if (t) m->joined = t->session.add_source(&m->tracker);
    *out = m.release();
  });
}

void simprof_memory_tracker_free(simprof_memory_tracker* tracker) { delete tracker; }

int simprof_memory_tracker_enabled(const simprof_memory_tracker* m) {
  return m && m->device->enabled() ? 1 : 0;
}

const char* simprof_memory_tracker_reason(const simprof_memory_tracker* m) {
  return m ? m->device->disabled_reason().c_str() : "";
}

simprof_status simprof_memory_tracker_total(const simprof_memory_tracker* m, const char* stage,
                                            simprof_alloc_counts* out) {
  SIMPROF_C_REQUIRE(m, "memory tracker");
  SIMPROF_C_REQUIRE(stage, "stage name");
  SIMPROF_C_REQUIRE(out, "out");
  const std::string_view name(stage);
  const simprof::AllocCounts c = m->tracker.total(name, simprof::MemorySide::kDevice);
  *out =
      simprof_alloc_counts{c.allocs, c.alloc_bytes, c.frees, c.free_bytes, m->tracker.steps(name)};
  return SIMPROF_OK;
}

simprof_status simprof_memory_tracker_state(simprof_memory_tracker* m, simprof_memory_state* out) {
  SIMPROF_C_REQUIRE(m, "memory tracker");
  SIMPROF_C_REQUIRE(out, "out");
  return guarded([&] {
    const simprof::SteadyAllocation& a = m->tracker.first_steady_allocation();
    m->first_stage = a.stage;
    *out = simprof_memory_state{m->tracker.device_in_use_bytes(),
                                m->tracker.device_peak_bytes(),
                                m->tracker.steady_allocating_steps(),
                                a.step,
                                a.allocs,
                                a.bytes,
                                m->first_stage.c_str()};
  });
}

}  // extern "C"
