// SPDX-License-Identifier: MIT
// StepGraph: one step body captured once and replayed, for engines with one fixed shape.
#pragma once

#include <cuda_runtime_api.h>

#include "simprof/cuda/graphs/graph_cache.hpp"

namespace simprof::cuda {

/// One step body captured once and replayed: a GraphCache of one fixed key.
///
///   simprof::cuda::StepGraph graph(stream, [&](cudaStream_t s) { engine.enqueue_step(s); });
///   for (;;) graph.run();   // warm-up, capture, then replays
class StepGraph {
 public:
  StepGraph(cudaStream_t stream, GraphCache::Body body, GraphCacheOptions options = {});
  void run() { cache_.run(GraphKey{}, body_); }
  void recapture() { cache_.recapture(GraphKey{}, body_); }
  bool captured() const noexcept { return cache_.captured(GraphKey{}); }
  GraphCache& cache() noexcept { return cache_; }
  const GraphCache& cache() const noexcept { return cache_; }

 private:
  GraphCache::Body body_;
  GraphCache cache_;
};

}  // namespace simprof::cuda
