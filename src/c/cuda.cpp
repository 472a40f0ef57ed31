// SPDX-License-Identifier: MIT
// The C API's CUDA room: the CUPTI kernel tracer as a trace session's source, and NVTX ranges for
// the profiler's stages. Compiled only where the CUDA backend is built (src/c/CMakeLists.txt);
// cuda_unavailable.cpp answers the same calls otherwise.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "c_api_internal.hpp"
#include "simprof/cuda/trace/kernel_tracer.hpp"
#include "simprof/cuda/trace/nvtx.hpp"

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

}  // extern "C"
