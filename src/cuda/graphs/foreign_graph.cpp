// SPDX-License-Identifier: MIT
#include "simprof/cuda/graphs/foreign_graph.hpp"

#include <stdexcept>
#include <utility>

#include "simprof/cuda/runtime/error.hpp"

namespace simprof::cuda {

ForeignCapture::ForeignCapture(std::shared_ptr<GraphInstrumentation> tool, cudaStream_t stream)
    : tool_(std::move(tool)) {
  if (!tool_) throw std::invalid_argument("simprof: ForeignCapture of a null tool");
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  SIMPROF_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  if (status != cudaStreamCaptureStatusActive)
    throw std::logic_error(
        "simprof: ForeignCapture: the stream is not capturing (begin the framework's capture "
        "first, e.g. inside `with torch.cuda.graph(g):`)");
  tool_->capture_begins(stream);
}

void ForeignCapture::end() noexcept {
  if (tool_) tool_->capture_ends();
  tool_.reset();
}

InstrumentedGraph::InstrumentedGraph(std::shared_ptr<GraphInstrumentation> tool,
                                     cudaGraph_t captured)
    : tool_(tool) {
  if (!tool) throw std::invalid_argument("simprof: InstrumentedGraph of a null tool");
  if (captured == nullptr)
    throw std::invalid_argument(
        "simprof: InstrumentedGraph of a null graph (torch: capture with "
        "torch.cuda.CUDAGraph(keep_graph=True) so raw_cuda_graph() has it)");
  copy_.reset(tool->instrumented_copy(captured));
  if (!copy_) return;
  // Node priorities: the timer's stamps run at the greatest (stamp_graph.cpp), the captured work
  // at the priority it was captured with.
  SIMPROF_CUDA_CHECK(cudaGraphInstantiateWithFlags(exec_.out(), copy_.get(),
                                                   cudaGraphInstantiateFlagUseNodePriority));
}

InstrumentedGraph::~InstrumentedGraph() {
  if (!copy_) return;
  if (const auto tool = tool_.lock()) tool->copy_released(copy_.get());
}

bool InstrumentedGraph::launch(cudaStream_t stream) {
  if (!exec_) return false;
  const auto tool = tool_.lock();
  if (!tool || !tool->instrumented_launch()) return false;
  SIMPROF_CUDA_CHECK(cudaGraphLaunch(exec_.get(), stream));
  ++launches_;
  return true;
}

}  // namespace simprof::cuda
