// SPDX-License-Identifier: MIT
// The driver's event record and capture query, for what LaunchScopes records at a launch. The
// launch hook's watcher runs inside the program's runtime launch (cudaLaunchKernel, ...): a
// runtime call there is a nested runtime API call, which CUPTI's activity records correlate wrongly
// for another tool in the process (torch.profiler). A driver call inside a runtime call is what the
// runtime itself makes. Private to src/cuda/trace.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <string>

#include "simprof/cuda/runtime/error.hpp"

namespace simprof::cuda::detail {

struct ScopeDriver {
  CUresult (*record_fn)(CUevent, CUstream) = nullptr;
  CUresult (*capturing_fn)(CUstream, CUstreamCaptureStatus*) = nullptr;

  /// Finds the entry points through the runtime; empty where it found both, else what is missing.
  std::string find() {
    record_fn = reinterpret_cast<decltype(record_fn)>(driver_entry_point("cuEventRecord"));
    capturing_fn =
        reinterpret_cast<decltype(capturing_fn)>(driver_entry_point("cuStreamIsCapturing"));
    if (record_fn != nullptr && capturing_fn != nullptr) return {};
    return std::string("the CUDA runtime gave no driver entry point for ") +
           (record_fn == nullptr ? "cuEventRecord" : "cuStreamIsCapturing") +
           " (cudaGetDriverEntryPointByVersion)";
  }
  /// Records `e` on `s` (cuEventRecord).
  bool record(cudaEvent_t e, cudaStream_t s) const noexcept {
    return record_fn(e, s) == CUDA_SUCCESS;
  }
  /// Whether `s` is being captured, or cannot be asked.
  bool captured(cudaStream_t s) const noexcept {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    return capturing_fn(s, &status) != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_NONE;
  }
};

}  // namespace simprof::cuda::detail
