// SPDX-License-Identifier: MIT
// What can go wrong when a step is captured into a CUDA graph, named: the pitfalls, the diagnosis
// GraphCache attaches to a key that fell back to eager execution, and the error it throws instead
// when eager fallback is off.
//
/* clang-format off */
//   if (auto d = cache.diagnosis({n_envs}))
//     fmt::print("{}: {}\n", simprof::cuda::to_string(d->pitfall), d->message);
/* clang-format on */
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>
#include <string_view>

#include "simprof/cuda/runtime/error.hpp"

namespace simprof::cuda {

/// Why a capture failed: the CUDA rule the captured body broke.
enum class CapturePitfall {
  /// The capture did not fail.
  kNone,
  kSynchronization,  ///< cudaStreamSynchronize / cudaDeviceSynchronize / cudaEventSynchronize
  kSynchronousCopy,  ///< cudaMemcpy/cudaMemset without Async, or work on the legacy stream
  kAllocation,       ///< cudaMalloc / cudaFree / cudaMallocHost during capture
  kWrongThread,      ///< the capture was ended (or touched) from another thread
  kInvalidated,      ///< an earlier error invalidated the capture
  kUnsupported,      ///< an operation not permitted during capture, call unknown
  kException,        ///< the body threw something that is not a CUDA error
  /// Any other CUDA error during capture.
  kOther,
};
/// The pitfall in words, e.g. "allocation during capture".
std::string_view to_string(CapturePitfall p) noexcept;

/// What went wrong in a failed capture, named for the user.
struct CaptureDiagnosis {
  /// The rule broken.
  CapturePitfall pitfall = CapturePitfall::kNone;
  /// The CUDA error the capture ended with.
  cudaError_t code = cudaSuccess;
  std::string call;     ///< the failing call's text when the body used SIMPROF_CUDA_CHECK
  std::string message;  ///< one readable paragraph: what happened and what to do
};

/// Thrown by a GraphCache without eager fallback when a capture fails; what() is the message.
class CaptureError : public std::runtime_error {
 public:
  /// Carries `d`; what() is its message.
  explicit CaptureError(CaptureDiagnosis d);
  /// What went wrong.
  const CaptureDiagnosis& diagnosis() const noexcept { return d_; }

 private:
  CaptureDiagnosis d_;
};

/// Classifies a capture failure from the error code and, when known, the failing call's identity
/// (CudaError::kind(): a synchronisation, an allocation, a synchronous copy) and text (for the
/// message).
CaptureDiagnosis diagnose_capture(cudaError_t code, CudaCall kind = CudaCall::kOther,
                                  std::string call = {});

}  // namespace simprof::cuda
