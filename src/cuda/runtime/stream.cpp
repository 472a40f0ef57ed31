// SPDX-License-Identifier: MIT
#include "simprof/cuda/runtime/stream.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace simprof::cuda {

int current_device() {
  int d = 0;
  SIMPROF_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

int stream_device(cudaStream_t stream) {
  int d = 0;
  SIMPROF_CUDA_CHECK(cudaStreamGetDevice(stream, &d));
  return d;
}

int greatest_priority() noexcept {
  int least = 0, greatest = 0;
  if (cudaDeviceGetStreamPriorityRange(&least, &greatest) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return greatest;
}

int bind_device(cudaStream_t stream, const char* who) {
  const int current = current_device();
  const int of_stream = stream_device(stream);
  if (of_stream != current)
    throw std::invalid_argument(fmt::format(
        "simprof: {}: the stream is on device {} but device {} is current (what it makes is made "
        "on the current device: cudaSetDevice({}) first)",
        who, of_stream, current, of_stream));
  return current;
}

}  // namespace simprof::cuda
