// SPDX-License-Identifier: MIT
// CUDA error checking: every failure names the call, the CUDA error name and string, and file:line.
//
/* clang-format off */
//   SIMPROF_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, stream));
//   my_kernel<<<grid, block, 0, stream>>>();
//   SIMPROF_CUDA_CHECK_LAUNCH("my_kernel");
/* clang-format on */
//
// A sticky error (an illegal address inside a kernel) is reported by the next call that observes
// it, typically the next synchronisation, as a CudaError: it never hangs the step loop.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace simprof::cuda {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, std::string call, const char* file, int line);
  cudaError_t code() const noexcept { return code_; }
  /// The failing call's source text, e.g. "cudaStreamSynchronize(stream)".
  const std::string& call() const noexcept { return call_; }
  const char* file() const noexcept { return file_; }
  int line() const noexcept { return line_; }

 private:
  cudaError_t code_;
  std::string call_;
  const char* file_;
  int line_;
};

/// "cudaErrorIllegalAddress (an illegal memory access was encountered)".
std::string describe(cudaError_t code);
/// A driver API result (CUresult) by the driver's own name: "CUDA_ERROR_ILLEGAL_ADDRESS (an
/// illegal memory access was encountered; driver error 700)".
std::string describe_driver(int result);

namespace detail {
/// A driver API function by name (cuStreamWriteValue32, cuCtxGetCurrent, ...) through the
/// runtime's entry points — simprof links no libcuda; null when this driver has none.
void* driver_entry_point(const char* symbol) noexcept;
}  // namespace detail

[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);

/// Whether a CUDA device can be used; when not, false, and `why` (if given) receives the reason.
/// Never throws.
bool device_available(std::string* why = nullptr) noexcept;

}  // namespace simprof::cuda

#define SIMPROF_CUDA_CHECK(call)                                                       \
  do {                                                                                 \
    const cudaError_t simprof_cuda_err_ = (call);                                      \
    if (simprof_cuda_err_ != cudaSuccess)                                              \
      ::simprof::cuda::throw_cuda_error(simprof_cuda_err_, #call, __FILE__, __LINE__); \
  } while (0)

/// After a kernel launch: reports launch errors (bad configuration, no device) under `what`.
#define SIMPROF_CUDA_CHECK_LAUNCH(what)                                                            \
  do {                                                                                             \
    const cudaError_t simprof_cuda_err_ = cudaGetLastError();                                      \
    if (simprof_cuda_err_ != cudaSuccess)                                                          \
      ::simprof::cuda::throw_cuda_error(simprof_cuda_err_, "launch of " what, __FILE__, __LINE__); \
  } while (0)
