// SPDX-License-Identifier: MIT
#include "simprof/cuda/graphs/capture.hpp"

#include <fmt/format.h>

#include "simprof/cuda/runtime/error.hpp"

namespace simprof::cuda {

std::string_view to_string(CapturePitfall p) noexcept {
  switch (p) {
    case CapturePitfall::kNone:
      return "none";
    case CapturePitfall::kSynchronization:
      return "synchronisation inside the step";
    case CapturePitfall::kSynchronousCopy:
      return "synchronous copy or legacy-stream use";
    case CapturePitfall::kAllocation:
      return "allocation during capture";
    case CapturePitfall::kWrongThread:
      return "capture used from another thread";
    case CapturePitfall::kInvalidated:
      return "invalidated capture";
    case CapturePitfall::kUnsupported:
      return "operation not permitted during capture";
    case CapturePitfall::kException:
      return "exception in the step";
    case CapturePitfall::kOther:
      return "capture failed";
  }
  return "?";
}

CaptureDiagnosis diagnose_capture(cudaError_t code, CudaCall kind, std::string call) {
  CaptureDiagnosis d;
  d.code = code;
  d.call = std::move(call);
  const char* advice = "";
  if (kind == CudaCall::kSynchronize) {
    d.pitfall = CapturePitfall::kSynchronization;
    advice =
        "a graph cannot wait for the host: synchronise after the replay, and order work between "
        "streams with events";
  } else if (kind == CudaCall::kAllocation) {
    d.pitfall = CapturePitfall::kAllocation;
    advice =
        "allocate persistent buffers before capture (or use cudaMallocAsync, which is captured "
        "as a node)";
  } else if (kind == CudaCall::kSynchronousCopy) {
    d.pitfall = CapturePitfall::kSynchronousCopy;
    advice = "use cudaMemcpyAsync/cudaMemsetAsync on the capture stream, with pinned host memory";
  } else {
    switch (code) {
      case cudaErrorStreamCaptureImplicit:
        d.pitfall = CapturePitfall::kSynchronousCopy;
        advice =
            "the step used the legacy (NULL) stream, which synchronises with the capture: put "
            "all of the step's work on the stream the cache passes to it";
        break;
      case cudaErrorStreamCaptureWrongThread:
        d.pitfall = CapturePitfall::kWrongThread;
        advice =
            "in thread-local capture mode the capture belongs to the thread that began it: "
            "enqueue the step and end the capture on that thread";
        break;
      case cudaErrorStreamCaptureInvalidated:
        d.pitfall = CapturePitfall::kInvalidated;
        advice =
            "an earlier error in the step invalidated the capture; run the step eagerly with "
            "SIMPROF_CUDA_CHECK around its calls to find the first failure";
        break;
      case cudaErrorStreamCaptureUnsupported:
        d.pitfall = CapturePitfall::kUnsupported;
        advice =
            "a synchronisation, synchronous copy or allocation is not permitted while capturing; "
            "wrap the step's CUDA calls in SIMPROF_CUDA_CHECK to have the call named";
        break;
      default:
        d.pitfall = CapturePitfall::kOther;
        advice = "see the CUDA error for the cause";
        break;
    }
  }
  d.message = fmt::format("{}: {} returned {}; {}", to_string(d.pitfall),
                          d.call.empty() ? std::string("a call in the step") : d.call,
                          describe(code), advice);
  return d;
}

CaptureError::CaptureError(CaptureDiagnosis d)
    : std::runtime_error("simprof: cannot capture the step: " + d.message), d_(std::move(d)) {}

}  // namespace simprof::cuda
