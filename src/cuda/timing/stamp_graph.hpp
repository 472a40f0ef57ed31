// SPDX-License-Identifier: MIT
// The graph calls that make a stamped copy of a captured graph, which both stamping timers use
// (stamp_timer.hpp). Private to src/cuda/timing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "../cupti/cupti_hub.hpp"  // OwnNodes: the stamps are not a stage's work
#include "simprof/cuda/runtime/handle.hpp"

namespace simprof::cuda::detail {

cudaError_t all_nodes(cudaGraph_t g, std::vector<cudaGraphNode_t>& out);
cudaError_t root_nodes(cudaGraph_t g, std::vector<cudaGraphNode_t>& out);
// The edges of `n` (its dependencies, or its dependents), with their data.
cudaError_t edges_of(cudaGraphNode_t n, bool dependents, std::vector<cudaGraphNode_t>& nodes,
                     std::vector<cudaGraphEdgeData>& data);
bool default_edge(const cudaGraphEdgeData& d) noexcept;
cudaError_t add_edge(cudaGraph_t g, cudaGraphNode_t from, cudaGraphNode_t to);
cudaError_t remove_edge(cudaGraph_t g, cudaGraphNode_t from, cudaGraphNode_t to);

// A one-thread kernel node `func(args)` after `deps`. With `priority` != 0 it is set on the node:
// at the greatest priority the block scheduler takes a stamp at the next free slot, ahead of other
// branches' waiting blocks. A driver that refuses it sets `priority` to 0 (not asked again).
cudaError_t add_stamp_node(cudaGraph_t g, const void* func, void** args,
                           const cudaGraphNode_t* deps, std::size_t n_deps, int& priority,
                           cudaGraphNode_t& out);

// A captured graph's clone, which a timer adds its stamps to (the captured graph is never
// touched). Each call throws CudaError naming the CUDA call that failed. Its nodes are simprof's
// while it is made: a kernel tracer gives the stamps no stage (the clones keep theirs).
class StampedCopy {
 public:
  explicit StampedCopy(cudaGraph_t graph);  // the clone, and its roots before any stamp
  // The captured work's roots.
  const std::vector<cudaGraphNode_t>& roots() const noexcept { return roots_; }
  cudaGraphNode_t clone_of(cudaGraphNode_t original) const;
  // add_stamp_node() on the copy.
  cudaGraphNode_t add_stamp(const void* func, void** args, const cudaGraphNode_t* after,
                            std::size_t n_after, int& priority);
  void add_edge(cudaGraphNode_t from, cudaGraphNode_t to);
  void remove_edge(cudaGraphNode_t from, cudaGraphNode_t to);
  void before_roots(cudaGraphNode_t node);                    // an edge from `node` to each root
  cudaGraph_t release() noexcept { return copy_.release(); }  // the caller's from now

 private:
  OwnNodes own_;
  GraphHandle copy_;
  std::vector<cudaGraphNode_t> roots_;
};

}  // namespace simprof::cuda::detail
