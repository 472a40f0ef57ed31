// SPDX-License-Identifier: MIT
#include "simprof/cuda/graphs/while_loop.hpp"

#include <stdexcept>
#include <string>

#include "simprof/cuda/graphs/instrumentation.hpp"
#include "simprof/cuda/runtime/error.hpp"

namespace simprof::cuda {

bool conditional_nodes_supported() noexcept {
#if CUDART_VERSION >= 12040
  int driver = 0;
  return cudaDriverGetVersion(&driver) == cudaSuccess && driver >= 12040;
#else
  return false;
#endif
}

namespace {

int checked_bound(int max_host_iterations) {
  if (max_host_iterations < 1)
    throw std::invalid_argument("simprof: WhileLoop: max_host_iterations = " +
                                std::to_string(max_host_iterations) + " (expected >= 1)");
  return max_host_iterations;
}

}  // namespace

WhileLoop::WhileLoop(int max_host_iterations)
    : max_host_iterations_(checked_bound(max_host_iterations)), flag_(1), host_flag_(1) {}

int WhileLoop::enqueue(cudaStream_t stream, const Body& body) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  SIMPROF_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  if (status == cudaStreamCaptureStatusNone) {
    // Host-driven: the host reads the condition after every iteration.
    const LoopCondition c{0, flag_.data(), 0};
    int iterations = 0;
    do {
      if (iterations == max_host_iterations_)
        throw std::runtime_error("simprof: WhileLoop: the host-driven loop ran " +
                                 std::to_string(iterations) +
                                 " iterations (max_host_iterations) and its condition is still "
                                 "true: does the body call set_condition() with a bound?");
      body(stream, c);
      ++iterations;
      flag_.copy_to_host(host_flag_.data(), 1, stream);
      SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
    } while (host_flag_[0] != 0);
    ++counters_.host_driven;
    counters_.host_iterations += static_cast<std::uint64_t>(iterations);
    return iterations;
  }
  if (status != cudaStreamCaptureStatusActive)
    throw CudaError(cudaErrorStreamCaptureInvalidated, "cudaStreamIsCapturing(stream)", __FILE__,
                    __LINE__);
#if CUDART_VERSION >= 12040
  if (!conditional_nodes_supported())
    throw std::runtime_error(
        "simprof: WhileLoop: capturing a while loop needs conditional graph nodes (CUDA >= "
        "12.4); the driver is older: run this step eagerly");
  CaptureInfo ci;
  SIMPROF_CUDA_CHECK(capture_info(stream, ci));
  cudaGraph_t graph = ci.graph;
  cudaGraphConditionalHandle handle{};
  // Default value 1 at every launch: the body runs at least once (do-while, like the host path).
  SIMPROF_CUDA_CHECK(
      cudaGraphConditionalHandleCreate(&handle, graph, 1, cudaGraphCondAssignDefault));
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = cudaGraphCondTypeWhile;
  params.conditional.size = 1;
  cudaGraphNode_t node = nullptr;
#if CUDART_VERSION >= 13000
  SIMPROF_CUDA_CHECK(cudaGraphAddNode(&node, graph, ci.deps, ci.edges, ci.n_deps, &params));
#else
  SIMPROF_CUDA_CHECK(cudaGraphAddNode_v2(&node, graph, ci.deps, ci.edges, ci.n_deps, &params));
#endif
  cudaGraph_t body_graph = params.conditional.phGraph_out[0];
  SIMPROF_CUDA_CHECK(cudaStreamBeginCaptureToGraph(body_stream_, body_graph, nullptr, nullptr, 0,
                                                   cudaStreamCaptureModeThreadLocal));
  const LoopCondition c{static_cast<unsigned long long>(handle), flag_.data(), 1};
  try {
    body(body_stream_, c);
  } catch (...) {
    cudaGraph_t ignored = nullptr;
    cudaStreamEndCapture(body_stream_, &ignored);  // owned by the conditional node
    throw;
  }
  cudaGraph_t captured = nullptr;  // the body graph again, owned by the conditional node
  SIMPROF_CUDA_CHECK(cudaStreamEndCapture(body_stream_, &captured));
#if CUDART_VERSION >= 13000
  SIMPROF_CUDA_CHECK(cudaStreamUpdateCaptureDependencies(stream, &node, nullptr, 1,
                                                         cudaStreamSetCaptureDependencies));
#else
  SIMPROF_CUDA_CHECK(cudaStreamUpdateCaptureDependencies_v2(stream, &node, nullptr, 1,
                                                            cudaStreamSetCaptureDependencies));
#endif
  ++counters_.captured;
  return 0;
#else
  (void)body;
  throw std::runtime_error(
      "simprof: WhileLoop: capturing a while loop needs conditional graph nodes (CUDA >= 12.4); "
      "this build's CUDA runtime is older: run this step eagerly");
#endif
}

}  // namespace simprof::cuda
