// SPDX-License-Identifier: MIT
// Private to src/cuda/graphs: the driver's count of graph-allocation memory (memory nodes), which
// GraphCache reads around making, launching and releasing executables, and its cold-path clock.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>

namespace simprof::cuda::detail {

// Bytes of device memory the driver counts for graphs' allocation nodes on `device` now: in use
// (cudaGraphMemAttrUsedMemCurrent) or reserved from the OS (ReservedMemCurrent); 0 when it cannot
// say. A query of the driver's bookkeeping: no synchronisation.
inline std::int64_t graph_memory_attr(int device, cudaGraphMemAttributeType attr) noexcept {
  unsigned long long v = 0;
  if (cudaDeviceGetGraphMemAttribute(device, attr, &v) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return static_cast<std::int64_t>(v);
}

inline std::int64_t graph_memory_in_use(int device) noexcept {
  return graph_memory_attr(device, cudaGraphMemAttrUsedMemCurrent);
}

// Seconds since `t0` on the steady clock (a capture's, an instantiation's cold-start times).
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace simprof::cuda::detail
