// SPDX-License-Identifier: MIT
// The C API's CUDA room: the CUPTI kernel tracer as a trace session's source, NVTX ranges for the
// profiler's stages, the step pacer, the stopwatch and the device memory tracker (the two GPU
// timers are in cuda_timers.cpp). Compiled only where the CUDA
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

using simprof::c_api::checked_options;
using simprof::c_api::checked_stream;
using simprof::c_api::copy_out;
using simprof::c_api::fail;
using simprof::c_api::guarded;

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

void simprof_step_pacer_options_init(simprof_step_pacer_options* o) {
  if (o == nullptr) return;
  const simprof::cuda::StepPacerOptions d;
  *o = simprof_step_pacer_options{sizeof(*o), d.max_in_flight, d.mark_every, d.span_every,
                                  d.fps_from_device ? 1 : 0};
}

simprof_status simprof_step_pacer_new(simprof_profiler* p, void* stream,
                                      const simprof_step_pacer_options* options,
                                      simprof_step_pacer** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    const simprof_step_pacer_options c =
        checked_options(options, simprof_step_pacer_options_init, "simprof_step_pacer_options");
    simprof::cuda::StepPacerOptions o;
    o.max_in_flight = c.max_in_flight;
    o.mark_every = c.mark_every;
    o.span_every = c.span_every;
    o.fps_from_device = c.fps_from_device != 0;
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
    auto m = std::make_unique<simprof_memory_tracker>(
        p->prof, simprof::cuda::DeviceAllocations::shared(), o);
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
