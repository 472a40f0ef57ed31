// SPDX-License-Identifier: MIT
// The C API's CUDA calls where the CUDA backend is not built (src/c/CMakeLists.txt picks this file
// or cuda.cpp): the handles cannot be made, and what reads them answers as for a NULL handle.
#include <cstdint>

#include "c_api_internal.hpp"

struct simprof_kernel_tracer {};
struct simprof_nvtx {};

namespace {

simprof_status no_cuda() {
  return simprof::c_api::fail(
      SIMPROF_UNAVAILABLE,
      "simprof: built without the CUDA backend (kernel tracer and NVTX need it)");
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

}  // extern "C"
