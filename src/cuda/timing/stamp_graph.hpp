// SPDX-License-Identifier: MIT
// What the stamping timers (DeviceStageTimer, GraphKernelTimer) share: the graph calls that make a
// stamped copy of a captured graph, the hook a GraphCache calls, and the timer's ties (TimerTies).
// Private to src/cuda/timing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "simprof/cuda/graphs/instrumentation.hpp"
#include "simprof/cuda/runtime/handle.hpp"
#include "simprof/profiler/step_profiler.hpp"

namespace simprof::cuda::detail {

cudaError_t all_nodes(cudaGraph_t g, std::vector<cudaGraphNode_t>& out);
cudaError_t root_nodes(cudaGraph_t g, std::vector<cudaGraphNode_t>& out);
// The edges of `n` (its dependencies, or its dependents), with their data.
cudaError_t edges_of(cudaGraphNode_t n, bool dependents, std::vector<cudaGraphNode_t>& nodes,
                     std::vector<cudaGraphEdgeData>& data);
bool default_edge(const cudaGraphEdgeData& d) noexcept;
cudaError_t add_edge(cudaGraph_t g, cudaGraphNode_t from, cudaGraphNode_t to);
cudaError_t remove_edge(cudaGraph_t g, cudaGraphNode_t from, cudaGraphNode_t to);
// The current device's greatest stream priority (0 where it cannot be read).
int greatest_priority() noexcept;

// A one-thread kernel node `func(args)` after `deps`. With `priority` != 0 it is set on the node:
// at the greatest priority the block scheduler takes a stamp at the next free slot, ahead of other
// branches' waiting blocks. A driver that refuses it sets `priority` to 0 (not asked again).
cudaError_t add_stamp_node(cudaGraph_t g, const void* func, void** args,
                           const cudaGraphNode_t* deps, std::size_t n_deps, int& priority,
                           cudaGraphNode_t& out);

// A captured graph's clone, which a timer adds its stamps to (the captured graph is never
// touched). Each call throws CudaError naming the CUDA call that failed.
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
  GraphHandle copy_;
  std::vector<cudaGraphNode_t> roots_;
};

// GraphCache's view of a stamping timer, held weakly there; a user may keep it (instrumentation()
// hands out a shared_ptr): the timer's destructor detaches it, and a detached hook adds nothing.
template <class Timer>
class StampHook final : public GraphInstrumentation {
 public:
  explicit StampHook(Timer* t) : timer_(t) {}
  void detach() noexcept { timer_ = nullptr; }
  void capture_begins(cudaStream_t s) noexcept override {
    if (timer_) timer_->capture_begins(s);
  }
  void capture_ends() noexcept override {
    if (timer_) timer_->capture_ends();
  }
  cudaGraph_t instrumented_copy(cudaGraph_t graph) noexcept override {
    return timer_ ? timer_->instrumented_copy(graph) : nullptr;
  }
  bool instrumented_launch() const noexcept override {
    return timer_ && timer_->instrumented_launch();
  }
  void copy_released(cudaGraph_t copy) noexcept override {
    if (timer_) timer_->copy_released(copy);
  }

 private:
  Timer* timer_;
};

// A stamping timer's ties to the world, its last member: the hook a GraphCache holds and the
// profiler's attachment, made last (nothing can throw once the profiler calls the timer) and undone
// first: the hook detached (a cache that still holds it launches the plain graph from then on), the
// timer detached from the profiler, then the timer's stream (its `stream` member, as it is then)
// drained: its stamps may be in flight; errors are not thrown there.
template <class Timer>
class TimerTies {
 public:
  TimerTies(Timer& timer, StepProfiler& prof)
      : timer_(timer),
        hook_(std::make_shared<StampHook<Timer>>(&timer)),
        attached_(prof.attach(timer)) {}
  ~TimerTies() {
    hook_->detach();
    attached_.detach();
    cudaStreamSynchronize(timer_.stream);
  }
  TimerTies(const TimerTies&) = delete;
  TimerTies& operator=(const TimerTies&) = delete;
  std::shared_ptr<GraphInstrumentation> hook() const noexcept { return hook_; }

 private:
  Timer& timer_;
  std::shared_ptr<StampHook<Timer>> hook_;
  ListenerAttachment attached_;
};

}  // namespace simprof::cuda::detail
