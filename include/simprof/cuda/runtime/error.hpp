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

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace simprof::cuda {

/// What a checked CUDA call does, as far as a graph capture cares: known by the function's name,
/// decided when SIMPROF_CUDA_CHECK is compiled (classify_call), carried by CudaError.
enum class CudaCall : std::uint8_t {
  kOther,            ///< anything else (asynchronous work, queries, launches)
  kSynchronize,      ///< waits for the host: cudaStreamSynchronize, cudaDeviceSynchronize, ...
  kAllocation,       ///< cudaMalloc, cudaFree, cudaMallocHost, cudaHostAlloc, ... (not ...Async)
  kSynchronousCopy,  ///< cudaMemcpy, cudaMemset and their 2D/3D/symbol forms (not ...Async)
};

/// The identity of the call whose source text is `call` ("cudaMemcpy(a, b, n, k)"): the function
/// named before the first '(' or '<' (namespace qualifiers, a leading "::" or '(' ignored), looked
/// up by its whole name. constexpr: SIMPROF_CUDA_CHECK decides it at compile time.
constexpr CudaCall classify_call(std::string_view call) noexcept {
  std::size_t b = 0;
  while (b < call.size() && (call[b] == ' ' || call[b] == ':' || call[b] == '(')) ++b;
  std::size_t e = b;
  while (e < call.size() && call[e] != '(' && call[e] != ' ' && call[e] != '<') ++e;
  std::string_view f = call.substr(b, e - b);
  if (const std::size_t q = f.rfind("::"); q != std::string_view::npos) f = f.substr(q + 2);
  constexpr std::string_view kSync[] = {"cudaStreamSynchronize", "cudaDeviceSynchronize",
                                        "cudaEventSynchronize", "cudaThreadSynchronize"};
  constexpr std::string_view kAlloc[] = {"cudaMalloc",
                                         "cudaFree",
                                         "cudaMallocHost",
                                         "cudaFreeHost",
                                         "cudaHostAlloc",
                                         "cudaMallocManaged",
                                         "cudaMallocPitch",
                                         "cudaMalloc3D",
                                         "cudaMallocArray",
                                         "cudaFreeArray",
                                         "cudaMalloc3DArray",
                                         "cudaHostRegister",
                                         "cudaHostUnregister",
                                         "cudaFreeMipmappedArray",
                                         "cudaMallocMipmappedArray"};
  constexpr std::string_view kCopy[] = {"cudaMemcpy",
                                        "cudaMemcpy2D",
                                        "cudaMemcpy3D",
                                        "cudaMemcpy3DPeer",
                                        "cudaMemcpyPeer",
                                        "cudaMemcpyToSymbol",
                                        "cudaMemcpyFromSymbol",
                                        "cudaMemcpyToArray",
                                        "cudaMemcpyFromArray",
                                        "cudaMemcpyArrayToArray",
                                        "cudaMemcpy2DToArray",
                                        "cudaMemcpy2DFromArray",
                                        "cudaMemcpy2DArrayToArray",
                                        "cudaMemset",
                                        "cudaMemset2D",
                                        "cudaMemset3D"};
  for (const std::string_view n : kSync)
    if (f == n) return CudaCall::kSynchronize;
  for (const std::string_view n : kAlloc)
    if (f == n) return CudaCall::kAllocation;
  for (const std::string_view n : kCopy)
    if (f == n) return CudaCall::kSynchronousCopy;
  return CudaCall::kOther;
}

/// A failed CUDA runtime call: its error code, source text, identity and place.
class CudaError : public std::runtime_error {
 public:
  /// `kind` is classify_call(call) unless given.
  CudaError(cudaError_t code, std::string call, const char* file, int line);
  /// With the call's identity decided where it was checked.
  CudaError(cudaError_t code, std::string call, CudaCall kind, const char* file, int line);
  /// The CUDA error the call returned.
  cudaError_t code() const noexcept { return code_; }
  /// What the call does (a synchronisation, an allocation, a synchronous copy, other).
  CudaCall kind() const noexcept { return kind_; }
  /// The failing call's source text, e.g. "cudaStreamSynchronize(stream)".
  const std::string& call() const noexcept { return call_; }
  /// The source file of the check that failed (SIMPROF_CUDA_CHECK's __FILE__).
  const char* file() const noexcept { return file_; }
  /// The line of the check that failed.
  int line() const noexcept { return line_; }

 private:
  cudaError_t code_;
  std::string call_;
  CudaCall kind_;
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
/// runtime's entry points — simprof links no libcuda; null when this driver has none. `version`:
/// the CUDA version whose flavour of the function is wanted (a function added after it is not
/// found: cuFuncGetName needs 12030).
void* driver_entry_point(const char* symbol, int version = 12000) noexcept;
}  // namespace detail

/// Throws CudaError (the check macros' slow path).
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);
/// Throws CudaError with the call's identity (SIMPROF_CUDA_CHECK).
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, CudaCall kind,
                                   const char* file, int line);

/// Whether a CUDA device can be used; when not, false, and `why` (if given) receives the reason.
/// Never throws.
bool device_available(std::string* why = nullptr) noexcept;

}  // namespace simprof::cuda

#define SIMPROF_CUDA_CHECK(call)                                                                \
  do {                                                                                          \
    const cudaError_t simprof_cuda_err_ = (call);                                               \
    if (simprof_cuda_err_ != cudaSuccess) {                                                     \
      constexpr ::simprof::cuda::CudaCall simprof_cuda_kind_ =                                  \
          ::simprof::cuda::classify_call(#call);                                                \
      ::simprof::cuda::throw_cuda_error(simprof_cuda_err_, #call, simprof_cuda_kind_, __FILE__, \
                                        __LINE__);                                              \
    }                                                                                           \
  } while (0)

/// After a kernel launch: reports launch errors (bad configuration, no device) under `what`.
#define SIMPROF_CUDA_CHECK_LAUNCH(what)                                                            \
  do {                                                                                             \
    const cudaError_t simprof_cuda_err_ = cudaGetLastError();                                      \
    if (simprof_cuda_err_ != cudaSuccess)                                                          \
      ::simprof::cuda::throw_cuda_error(simprof_cuda_err_, "launch of " what, __FILE__, __LINE__); \
  } while (0)
