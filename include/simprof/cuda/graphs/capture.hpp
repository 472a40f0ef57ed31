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

enum class CapturePitfall {
  kNone,
  kSynchronization,  ///< cudaStreamSynchronize / cudaDeviceSynchronize / cudaEventSynchronize
  kSynchronousCopy,  ///< cudaMemcpy/cudaMemset without Async, or work on the legacy stream
  kAllocation,       ///< cudaMalloc / cudaFree / cudaMallocHost during capture
  kWrongThread,      ///< the capture was ended (or touched) from another thread
  kInvalidated,      ///< an earlier error invalidated the capture
  kUnsupported,      ///< an operation not permitted during capture, call unknown
  kException,        ///< the body threw something that is not a CUDA error
  kOther,
};
std::string_view to_string(CapturePitfall p) noexcept;

struct CaptureDiagnosis {
  CapturePitfall pitfall = CapturePitfall::kNone;
  cudaError_t code = cudaSuccess;
  std::string call;     ///< the failing call's text when the body used SIMPROF_CUDA_CHECK
  std::string message;  ///< one readable paragraph: what happened and what to do
};

class CaptureError : public std::runtime_error {
 public:
  explicit CaptureError(CaptureDiagnosis d);
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
