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
  /// `body` runs on `stream` (as GraphCache requires: non-blocking, of the current device).
  StepGraph(cudaStream_t stream, GraphCache::Body body, GraphCacheOptions options = {});
  /// Executes one step: eagerly while warming up, then captured, then replayed.
  void run() { cache_.run(GraphKey{}, body_); }
  /// Recaptures the body (see GraphCache::recapture()); executes one step.
  void recapture() { cache_.recapture(GraphKey{}, body_); }
  /// Whether the step replays a graph now.
  bool captured() const noexcept { return cache_.captured(GraphKey{}); }
  /// The cache underneath (counters, diagnosis, instrumentation).
  GraphCache& cache() noexcept { return cache_; }
  /// The cache underneath (counters, diagnosis, instrumentation).
  const GraphCache& cache() const noexcept { return cache_; }

 private:
  GraphCache::Body body_;
  GraphCache cache_;
};

}  // namespace simprof::cuda
