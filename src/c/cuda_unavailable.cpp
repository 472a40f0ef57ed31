// SPDX-License-Identifier: MIT
// The C API's CUDA calls where the CUDA backend is not built (src/c/CMakeLists.txt picks this file
// or cuda.cpp): the handles cannot be made, and what reads them answers as for a NULL handle.
#include <cstdint>

#include "c_api_internal.hpp"

struct simprof_kernel_tracer {};
struct simprof_nvtx {};
struct simprof_step_pacer {};
struct simprof_stage_timer {};
struct simprof_stamped_graph {};
struct simprof_kernel_timer {};
struct simprof_stopwatch {};
struct simprof_memory_tracker {};
struct simprof_gpu_profile {};

namespace {

simprof_status no_cuda() {
  return simprof::c_api::fail(SIMPROF_UNAVAILABLE,
                              "simprof: built without the CUDA backend (the kernel tracer, NVTX, "
                              "the GPU profile, the step pacer, the device "
                              "stage timer, the kernel timer, the stopwatch and the memory tracker "
                              "need it)");
}

}  // namespace

extern "C" {

simprof_status simprof_kernel_tracer_new(simprof_profiler* p, simprof_trace* t, int flags,
                                         simprof_kernel_tracer** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(t, "trace");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  (void)flags;
  return no_cuda();
}

void simprof_kernel_tracer_free(simprof_kernel_tracer* tracer) { delete tracer; }

int simprof_kernel_tracer_enabled(const simprof_kernel_tracer* k) {
  (void)k;
  return 0;
}

const char* simprof_kernel_tracer_reason(const simprof_kernel_tracer* k) {
  (void)k;
  return "built without the CUDA backend";
}

uint64_t simprof_kernel_tracer_dropped(const simprof_kernel_tracer* k) {
  (void)k;
  return 0;
}

simprof_status simprof_nvtx_new(simprof_profiler* p, simprof_nvtx** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return no_cuda();
}

void simprof_nvtx_free(simprof_nvtx* nvtx) { delete nvtx; }

simprof_status simprof_stream_check(void*, int*) { return no_cuda(); }

void simprof_step_pacer_options_init(simprof_step_pacer_options* o) {
  if (o == nullptr) return;
  *o = simprof_step_pacer_options{sizeof(*o), 2, 8, 8, 1};
}

simprof_status simprof_step_pacer_new(simprof_profiler*, void*, const simprof_step_pacer_options*,
                                      simprof_step_pacer** out) {
  if (out) *out = nullptr;
  return no_cuda();
}

void simprof_step_pacer_free(simprof_step_pacer* pacer) { delete pacer; }

simprof_status simprof_step_pacer_finish(simprof_step_pacer*) { return no_cuda(); }

simprof_status simprof_step_pacer_counters(const simprof_step_pacer*, simprof_pacer_counters*) {
  return no_cuda();
}

simprof_status simprof_step_pacer_device_steps(const simprof_step_pacer*, simprof_device_steps*) {
  return no_cuda();
}

void simprof_stage_timer_options_init(simprof_stage_timer_options* o) {
  if (o == nullptr) return;
  *o = simprof_stage_timer_options{sizeof(*o), 16, 2, 64, 1, 0};
}

simprof_status simprof_stage_timer_new(simprof_profiler*, void*, const simprof_stage_timer_options*,
                                       simprof_stage_timer** out) {
  if (out) *out = nullptr;
  return no_cuda();
}

void simprof_stage_timer_free(simprof_stage_timer* timer) { delete timer; }

simprof_status simprof_stage_timer_set_stream(simprof_stage_timer*, void*) { return no_cuda(); }

simprof_status simprof_stage_timer_poll(simprof_stage_timer*) { return no_cuda(); }

simprof_status simprof_stage_timer_synchronize(simprof_stage_timer*) { return no_cuda(); }

simprof_status simprof_stage_timer_timings_count(simprof_stage_timer*, size_t*) {
  return no_cuda();
}

simprof_status simprof_stage_timer_timings_get(const simprof_stage_timer*, size_t, const char**,
                                               double*) {
  return no_cuda();
}

simprof_status simprof_stage_timer_mean(const simprof_stage_timer*, const char*, int, double*) {
  return no_cuda();
}

uint64_t simprof_stage_timer_joined(const simprof_stage_timer*) { return 0; }

uint64_t simprof_stage_timer_dropped(const simprof_stage_timer*) { return 0; }

uint64_t simprof_stage_timer_unpaired(const simprof_stage_timer*) { return 0; }

uint64_t simprof_stage_timer_unstamped(const simprof_stage_timer*) { return 0; }

simprof_status simprof_device_stage_table(const simprof_profiler*, const simprof_stage_timer*,
                                          char*, size_t, size_t*) {
  return no_cuda();
}

simprof_status simprof_write_device_run_record(const simprof_profiler*, const simprof_stage_timer*,
                                               const char*, const char*, const char* const*,
                                               const char* const*, size_t) {
  return no_cuda();
}

simprof_status simprof_stage_timer_capture_begin(simprof_stage_timer*, void*) { return no_cuda(); }

simprof_status simprof_stage_timer_capture_end(simprof_stage_timer*) { return no_cuda(); }

simprof_status simprof_stamped_graph_new(simprof_stage_timer*, void*, simprof_stamped_graph** out) {
  if (out) *out = nullptr;
  return no_cuda();
}

void simprof_stamped_graph_free(simprof_stamped_graph* graph) { delete graph; }

simprof_status simprof_stamped_graph_launch(simprof_stamped_graph*, void*, int*) {
  return no_cuda();
}

int simprof_stamped_graph_instrumented(const simprof_stamped_graph*) { return 0; }

uint64_t simprof_stamped_graph_launches(const simprof_stamped_graph*) { return 0; }

void simprof_kernel_timer_options_init(simprof_kernel_timer_options* o) {
  if (o == nullptr) return;
  *o = simprof_kernel_timer_options{sizeof(*o), 128, -1, 8, std::size_t{1} << 14};
}

simprof_status simprof_kernel_timer_new(simprof_profiler* p, void*,
                                        const simprof_kernel_timer_options*,
                                        simprof_kernel_timer** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return no_cuda();
}

void simprof_kernel_timer_free(simprof_kernel_timer* timer) { delete timer; }
simprof_status simprof_kernel_timer_poll(simprof_kernel_timer*) { return no_cuda(); }
simprof_status simprof_kernel_timer_join(simprof_kernel_timer*, simprof_trace*) {
  return no_cuda();
}
simprof_status simprof_kernel_timer_synchronize(simprof_kernel_timer*) { return no_cuda(); }
simprof_status simprof_kernel_timer_capture_begin(simprof_kernel_timer*, void*) {
  return no_cuda();
}
simprof_status simprof_kernel_timer_capture_end(simprof_kernel_timer*) { return no_cuda(); }
simprof_status simprof_kernel_timer_stamp(simprof_kernel_timer*, void*,
                                          simprof_stamped_graph** out) {
  if (out) *out = nullptr;
  return no_cuda();
}
simprof_status simprof_kernel_timer_nodes_count(simprof_kernel_timer*, size_t*) {
  return no_cuda();
}
simprof_status simprof_kernel_timer_node(const simprof_kernel_timer*, size_t,
                                         simprof_kernel_node*) {
  return no_cuda();
}
simprof_status simprof_kernel_timer_counters_get(const simprof_kernel_timer*,
                                                 simprof_kernel_timer_counters*) {
  return no_cuda();
}
simprof_status simprof_kernel_table(const simprof_kernel_timer*, size_t, char*, size_t, size_t*) {
  return no_cuda();
}

simprof_status simprof_stopwatch_new(void*, int, int, simprof_stopwatch** out) {
  if (out) *out = nullptr;
  return no_cuda();
}

void simprof_stopwatch_free(simprof_stopwatch* watch) { delete watch; }

simprof_status simprof_stopwatch_start(simprof_stopwatch*) { return no_cuda(); }

simprof_status simprof_stopwatch_stop(simprof_stopwatch*) { return no_cuda(); }

simprof_status simprof_stopwatch_seconds(simprof_stopwatch*, double*, double*, double*) {
  return no_cuda();
}

uint64_t simprof_stopwatch_laps(const simprof_stopwatch*) { return 0; }

simprof_status simprof_stopwatch_reset(simprof_stopwatch*) { return no_cuda(); }

const char* simprof_stopwatch_clock_label(const simprof_stopwatch*) {
  return "built without the CUDA backend";
}

simprof_status simprof_memory_tracker_new(simprof_profiler*, simprof_trace*, uint64_t,
                                          simprof_memory_tracker** out) {
  if (out) *out = nullptr;
  return no_cuda();
}

void simprof_memory_tracker_free(simprof_memory_tracker* tracker) { delete tracker; }

int simprof_memory_tracker_enabled(const simprof_memory_tracker*) { return 0; }

const char* simprof_memory_tracker_reason(const simprof_memory_tracker*) {
  return "built without the CUDA backend";
}

simprof_status simprof_memory_tracker_total(const simprof_memory_tracker*, const char*,
                                            simprof_alloc_counts*) {
  return no_cuda();
}

simprof_status simprof_memory_tracker_state(simprof_memory_tracker*, simprof_memory_state*) {
  return no_cuda();
}

void simprof_gpu_profile_options_init(simprof_gpu_profile_options* o) {
  if (o == nullptr) return;
  *o = simprof_gpu_profile_options{sizeof(*o), 2, 1, 16, 128};
}

simprof_status simprof_gpu_profile_new(simprof_profiler*, void*, const simprof_gpu_profile_options*,
                                       simprof_trace*, simprof_gpu_profile** out) {
  if (out) *out = nullptr;
  return no_cuda();
}

void simprof_gpu_profile_free(simprof_gpu_profile* gpu) { delete gpu; }

simprof_status simprof_gpu_profile_finish(simprof_gpu_profile*) { return no_cuda(); }

simprof_status simprof_gpu_profile_report(const simprof_gpu_profile*, char*, size_t, size_t*) {
  return no_cuda();
}

simprof_status simprof_gpu_profile_mean(const simprof_gpu_profile*, const char*, double*) {
  return no_cuda();
}

simprof_status simprof_gpu_profile_counters_get(const simprof_gpu_profile*,
                                                simprof_gpu_profile_counters*) {
  return no_cuda();
}

simprof_status simprof_gpu_profile_capture_begin(simprof_gpu_profile*, void*) { return no_cuda(); }

simprof_status simprof_gpu_profile_capture_end(simprof_gpu_profile*) { return no_cuda(); }

simprof_status simprof_gpu_profile_stamp(simprof_gpu_profile*, void*, simprof_stamped_graph** out) {
  if (out) *out = nullptr;
  return no_cuda();
}

}  // extern "C"
