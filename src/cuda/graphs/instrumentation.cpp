// SPDX-License-Identifier: MIT
#include "simprof/cuda/graphs/instrumentation.hpp"

namespace simprof::cuda {

cudaError_t capture_info(cudaStream_t stream, CaptureInfo& out) noexcept {
  out = CaptureInfo{};
#if CUDART_VERSION >= 13000
  return cudaStreamGetCaptureInfo(stream, &out.status, &out.id, &out.graph, &out.deps, &out.edges,
                                  &out.n_deps);
#else
  return cudaStreamGetCaptureInfo_v3(stream, &out.status, &out.id, &out.graph, &out.deps,
                                     &out.edges, &out.n_deps);
#endif
}

}  // namespace simprof::cuda
