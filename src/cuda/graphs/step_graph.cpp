// SPDX-License-Identifier: MIT
#include "simprof/cuda/graphs/step_graph.hpp"

#include <stdexcept>

namespace simprof::cuda {

StepGraph::StepGraph(cudaStream_t stream, GraphCache::Body body, GraphCacheOptions options)
    : body_(std::move(body)), cache_(stream, [&] {
        options.capacity = 1;
        return options;
      }()) {
  if (!body_) throw std::invalid_argument("simprof: StepGraph needs a body");
}

}  // namespace simprof::cuda
