// SPDX-License-Identifier: MIT
// What the C API's CUDA sources share (cuda.cpp, gpu_profile.cpp): a checked stream handle and the
// stamped-graph handle.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>

#include <fmt/format.h>

#include "simprof/cuda/gpu_profile.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/runtime/stream.hpp"

struct simprof_stamped_graph {
  simprof::cuda::ProfiledGraph graph;
};

namespace simprof::c_api {

// A stream handle from C (or Python) that CUDA knows, of the current device. A handle CUDA refuses
// is the caller's bad value (InvalidArgument), not a CUDA failure; no GPU at all is. CUDA cannot be
// asked about a handle that was destroyed (cudaStreamGetDevice reads the freed stream and can
// crash): that one is the caller's to avoid, and the Python package holds the
// stream objects it is given so that they live as long as the handle using them.
inline cudaStream_t checked_stream(void* handle, const char* who, int* device = nullptr) {
  const auto stream = static_cast<cudaStream_t>(handle);
  int of_stream = 0;
  const cudaError_t e = cudaStreamGetDevice(stream, &of_stream);
  if (e == cudaErrorInvalidResourceHandle || e == cudaErrorInvalidValue ||
      e == cudaErrorContextIsDestroyed) {
    cudaGetLastError();  // not sticky: leave nothing pending for the caller's next check
    throw std::invalid_argument(fmt::format(
        "simprof: {}: stream {} is not a live CUDA stream of this process ({}; expected a stream "
        "handle such as torch.cuda.current_stream().cuda_stream, or 0 for the default stream)",
        who, handle, simprof::cuda::describe(e)));
  }
  if (e != cudaSuccess)
    throw simprof::cuda::CudaError(e, "cudaStreamGetDevice", __FILE__, __LINE__);
  const int bound = simprof::cuda::bind_device(stream, who);  // of another device: refused there
  if (device) *device = bound;
  return stream;
}

}  // namespace simprof::c_api
