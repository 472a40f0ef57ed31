// SPDX-License-Identifier: MIT
#include "simprof/cuda/runtime/error.hpp"

#include <fmt/format.h>

#include "simprof/cuda/runtime/buffer.hpp"

namespace simprof::cuda {

std::string describe(cudaError_t code) {
  return fmt::format("{} ({})", cudaGetErrorName(code), cudaGetErrorString(code));
}

void* detail::driver_entry_point(const char* symbol, int version) noexcept {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(symbol, &p, static_cast<unsigned>(version),
                                       cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return p;
}

std::string describe_driver(int result) {
  using Name = int (*)(int, const char**);
  static const auto name = reinterpret_cast<Name>(detail::driver_entry_point("cuGetErrorName"));
  static const auto text = reinterpret_cast<Name>(detail::driver_entry_point("cuGetErrorString"));
  const char* n = nullptr;
  const char* t = nullptr;
  if (name == nullptr || name(result, &n) != 0 || n == nullptr) n = "CUDA driver error";
  if (text == nullptr || text(result, &t) != 0 || t == nullptr) t = "no description";
  return fmt::format("{} ({}; driver error {})", n, t, result);
}

CudaError::CudaError(cudaError_t code, std::string call, const char* file, int line)
    : CudaError(code, call, classify_call(call), file, line) {}

CudaError::CudaError(cudaError_t code, std::string call, CudaCall kind, const char* file, int line)
    : std::runtime_error(fmt::format("simprof: CUDA call {} failed: {} at {}:{}", call,
                                     describe(code), file, line)),
      code_(code),
      call_(std::move(call)),
      kind_(kind),
      file_(file),
      line_(line) {}

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  throw CudaError(code, call, file, line);
}

void throw_cuda_error(cudaError_t code, const char* call, CudaCall kind, const char* file,
                      int line) {
  throw CudaError(code, call, kind, file, line);
}

void throw_buffer_size(std::size_t asked, std::size_t size) {
  throw std::invalid_argument(fmt::format(
      "simprof: DeviceBuffer copy of {} elements (expected at most the buffer's {})", asked, size));
}

bool device_available(std::string* why) noexcept {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = fmt::format("cudaGetDeviceCount failed: {}", describe(e));
    cudaGetLastError();
    return false;
  }
  if (n == 0) {
    if (why) *why = "no CUDA device is visible";
    return false;
  }
  return true;
}

}  // namespace simprof::cuda
