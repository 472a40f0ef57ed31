// SPDX-License-Identifier: MIT
// The C API's two GPU timers: the device stage timer and the graph kernel timer, with the stamped
// copies of graphs other frameworks capture. Compiled only where the CUDA backend is built
// (src/c/CMakeLists.txt); cuda_unavailable.cpp answers the same calls otherwise.
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "c_api_internal.hpp"
#include "cuda_internal.hpp"
#include "simprof/cuda/graphs/foreign_graph.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/timing/kernel_timer.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"

using simprof::c_api::checked_options;
using simprof::c_api::checked_stream;
using simprof::c_api::copy_out;
using simprof::c_api::fail;
using simprof::c_api::guarded;

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

// --- the device stage timer ----------------------------------------------------------------------

void simprof_stage_timer_options_init(simprof_stage_timer_options* o) {
  if (o == nullptr) return;
  const simprof::cuda::DeviceStageTimerOptions d;
  *o = simprof_stage_timer_options{
      sizeof(*o),       d.sample_every, d.max_in_flight, d.ring, d.fps_from_device ? 1 : 0,
      d.merge_within_ns};
}

simprof_status simprof_stage_timer_new(simprof_profiler* p, void* stream,
                                       const simprof_stage_timer_options* options,
                                       simprof_stage_timer** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    const simprof_stage_timer_options c =
        checked_options(options, simprof_stage_timer_options_init, "simprof_stage_timer_options");
    simprof::cuda::DeviceStageTimerOptions o;
    o.sample_every = c.sample_every;
    o.max_in_flight = c.max_in_flight;
    o.ring = c.ring;
    o.fps_from_device = c.fps_from_device != 0;
    o.merge_within_ns = c.merge_within_ns;
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

simprof_status simprof_write_device_run_record(const simprof_profiler* p,
                                               const simprof_stage_timer* t, const char* path,
                                               const char* tool, const char* const* keys,
                                               const char* const* values, size_t n) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(t, "stage timer");
  SIMPROF_C_REQUIRE(path, "path");
  if (n > 0) {
    SIMPROF_C_REQUIRE(keys, "workload keys");
    SIMPROF_C_REQUIRE(values, "workload values");
  }
  return guarded([&] {
    simprof::RunRecordInfo info = simprof::c_api::record_info(tool, keys, values, n);
    info.device_stages = simprof::cuda::device_record_rows(p->prof, t->timer);
    simprof::write_run_record(p->prof, path, info);
  });
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

void simprof_kernel_timer_options_init(simprof_kernel_timer_options* o) {
  if (o == nullptr) return;
  const simprof::cuda::GraphKernelTimerOptions d;
  *o = simprof_kernel_timer_options{sizeof(*o), d.sample_every, d.sample_offset, d.ring,
                                    d.max_stamps};
}

simprof_status simprof_kernel_timer_new(simprof_profiler* p, void* stream,
                                        const simprof_kernel_timer_options* options,
                                        simprof_kernel_timer** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    const simprof_kernel_timer_options c =
        checked_options(options, simprof_kernel_timer_options_init, "simprof_kernel_timer_options");
    simprof::cuda::GraphKernelTimerOptions o;
    o.sample_every = c.sample_every;
    o.sample_offset = c.sample_offset;
    o.ring = c.ring;
    o.max_stamps = c.max_stamps;
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

}  // extern "C"
