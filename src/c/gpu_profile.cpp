// SPDX-License-Identifier: MIT
// The C API's GPU profile (cuda::GpuProfile): one handle for the whole GPU truth of a loop (with a
// trace session, the profile's kernel tracer joins it). Compiled where the CUDA backend is built;
// cuda_unavailable.cpp answers the same calls otherwise.
#include <cmath>
#include <optional>

#include "c_api_internal.hpp"
#include "cuda_internal.hpp"
#include "simprof/cuda/timing/kernel_timer.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"
#include "simprof/cuda/timing/step_pacer.hpp"

using simprof::c_api::checked_stream;
using simprof::c_api::copy_out;
using simprof::c_api::fail;
using simprof::c_api::guarded;

struct simprof_gpu_profile {
  simprof::cuda::GpuProfile gpu;
  std::optional<simprof::cuda::ProfiledCapture> capture;  // a framework's capture being noted
  simprof_gpu_profile(simprof::StepProfiler& p, cudaStream_t s,
                      const simprof::cuda::GpuProfileOptions& o)
      : gpu(p, s, o) {}
};

extern "C" {

void simprof_gpu_profile_options_init(simprof_gpu_profile_options* o) {
  if (o == nullptr) return;
  const simprof::cuda::GpuProfileOptions d;
  o->size = sizeof(*o);
  o->max_in_flight = d.max_in_flight;
  o->fps_from_device = d.fps_from_device ? 1 : 0;
  o->stage_sample_every = d.stage_sample_every;
  o->kernel_sample_every = d.kernel_sample_every;
}

simprof_status simprof_gpu_profile_new(simprof_profiler* p, void* stream,
                                       const simprof_gpu_profile_options* options,
                                       simprof_trace* trace, simprof_gpu_profile** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    const simprof_gpu_profile_options c = simprof::c_api::checked_options(
        options, simprof_gpu_profile_options_init, "simprof_gpu_profile_options");
    simprof::cuda::GpuProfileOptions o;
    o.max_in_flight = c.max_in_flight;
    o.fps_from_device = c.fps_from_device != 0;
    o.stage_sample_every = c.stage_sample_every;
    o.kernel_sample_every = c.kernel_sample_every;
    // The kernel tracer joined to the session is the profile's, owned by the profiler with the
    // rest: nothing here outlives the profiler.
    o.trace_session = trace != nullptr ? &trace->session : nullptr;
    *out = new simprof_gpu_profile(p->prof, checked_stream(stream, "GpuProfile"), o);
  });
}

void simprof_gpu_profile_free(simprof_gpu_profile* g) { delete g; }

simprof_status simprof_gpu_profile_finish(simprof_gpu_profile* g) {
  SIMPROF_C_REQUIRE(g, "GPU profile");
  return guarded([&] { g->gpu.finish(); });
}

simprof_status simprof_gpu_profile_report(const simprof_gpu_profile* g, char* buf, size_t cap,
                                          size_t* needed) {
  SIMPROF_C_REQUIRE(g, "GPU profile");
  return guarded([&] { copy_out(g->gpu.report(), buf, cap, needed); });
}

simprof_status simprof_gpu_profile_mean(const simprof_gpu_profile* g, const char* stage,
                                        double* out) {
  SIMPROF_C_REQUIRE(g, "GPU profile");
  SIMPROF_C_REQUIRE(stage, "stage");
  SIMPROF_C_REQUIRE(out, "out");
  return guarded([&] { *out = g->gpu.mean(stage); });
}

simprof_status simprof_gpu_profile_counters_get(const simprof_gpu_profile* g,
                                                simprof_gpu_profile_counters* out) {
  SIMPROF_C_REQUIRE(g, "GPU profile");
  SIMPROF_C_REQUIRE(out, "out");
  return guarded([&] {
    *out = simprof_gpu_profile_counters{};
    out->steps = g->gpu.pacer().device_steps().steps();
    if (g->gpu.options().stage_sample_every > 0) {
      const auto& s = g->gpu.stages();
      out->stages_joined = s.joined();
      out->stages_dropped = s.dropped();
      out->stages_unstamped = s.unstamped();
    }
    if (g->gpu.options().kernel_sample_every > 0) {
      out->kernel_replays = g->gpu.kernels().replays();
      out->kernel_dropped = g->gpu.kernels().dropped();
    }
  });
}

simprof_status simprof_gpu_profile_capture_begin(simprof_gpu_profile* g, void* capture_stream) {
  SIMPROF_C_REQUIRE(g, "GPU profile");
  return guarded([&] {
    if (g->capture)
      throw std::logic_error(
          "simprof: GpuProfile: a capture is already being noted (end it first)");
    g->capture.emplace(g->gpu.capturing(static_cast<cudaStream_t>(capture_stream)));
  });
}

simprof_status simprof_gpu_profile_capture_end(simprof_gpu_profile* g) {
  SIMPROF_C_REQUIRE(g, "GPU profile");
  if (!g->capture)
    return fail(SIMPROF_LOGIC_ERROR, "simprof: GpuProfile: capture_end without capture_begin");
  g->capture.reset();
  return SIMPROF_OK;
}

simprof_status simprof_gpu_profile_stamp(simprof_gpu_profile* g, void* graph,
                                         simprof_stamped_graph** out) {
  SIMPROF_C_REQUIRE(g, "GPU profile");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded(
      [&] { *out = new simprof_stamped_graph{g->gpu.stamp(static_cast<cudaGraph_t>(graph))}; });
}

}  // extern "C"
