// SPDX-License-Identifier: MIT
// The engine's iterative contact solver on the GPU (position-based, physics.hpp: pbd_*): per frame,
// predict, project contacts in passes until no env has a penetration above `tolerance` (or
// max_iterations passes), then derive velocities. Envs that converged skip later passes.
//
// Three ways to run the loop, all with the same kernels (so the same numbers):
//   * enqueue_step(stream, loop): through simprof::cuda::WhileLoop. Captured (GraphCache), the loop
//     is a conditional while node and stays on the GPU; eager, the host reads the condition after
//     every pass (the host-driven loop).
//   * enqueue_step_fixed(stream, passes): a fixed number of passes, unrolled (the usual way to put
//     an iterative solver in a graph: enough passes for the worst case, paid every frame).
// Every pass's kernels are real kernels, so a kernel tracer sees each iteration, and with per-env
// timers (rows = max_iterations) row i holds each env's time in pass i.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <vector>

#include "demo_engine/cuda_engine.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/graphs/while_loop.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/timing/device_timer_buffer.hpp"
#include "simprof/timers/timer_view.hpp"

namespace simprof::engine {

/// The loop's bookkeeping on the device.
struct SolverLoopState {
  unsigned active;   ///< envs that found a penetration above tolerance in the current pass
  int iteration;     ///< passes run this frame
  int converged_at;  ///< the pass after which no env was active (0: not yet)
  long long step;    ///< frames solved
};

class ContactSolver {
 public:
  static constexpr int kHistory = 1 << 16;  ///< frames whose pass counts are kept (a ring)

  /// Throws std::invalid_argument for max_iterations < 1 or a tolerance that is not > 0.
  ContactSolver(CudaEngine& engine, int max_iterations, float tolerance);

  /// One frame, the loop through `loop` (see the header comment). `timers` (rows >=
  /// max_iterations) gets each env's time per pass; reset it before the step if rows must not keep
  /// an earlier frame's values.
  void enqueue_step(cudaStream_t stream, cuda::WhileLoop& loop, const TimerView* timers = nullptr);
  /// One frame with exactly `passes` passes (throws std::invalid_argument for passes < 1).
  void enqueue_step_fixed(cudaStream_t stream, int passes, const TimerView* timers = nullptr);

  /// Per frame so far (at most kHistory, oldest first): the passes it took to converge, or minus
  /// the passes it ran when it did not converge. Synchronises `stream`.
  std::vector<int> pass_history(cudaStream_t stream) const;
  int max_iterations() const { return max_iterations_; }
  float tolerance() const { return tolerance_; }
  /// Kernels of a frame besides the passes (predict, finish, end of frame); a pass is 2 kernels.
  static constexpr int kKernelsPerFrame = 3;
  static constexpr int kKernelsPerPass = 2;

 private:
  void enqueue_pass(cudaStream_t stream, const cuda::LoopCondition& c, const TimerView* timers);
  /// predict, `passes`, finish, end of frame.
  void enqueue_frame(cudaStream_t stream, const std::function<void()>& passes);

  CudaEngine& engine_;
  int max_iterations_;
  float tolerance_;
  cuda::DeviceBuffer<float> x0_, y0_, z0_;
  cuda::DeviceBuffer<unsigned char> active_;
  cuda::DeviceBuffer<SolverLoopState> loop_;
  cuda::DeviceBuffer<int> history_;
  cuda::DeviceBuffer<unsigned> scratch_flag_;  // the fixed loop's condition, never read
};

/// How a frame's loop runs: the three ways compared by solver_loop and techniques_bench.
enum class LoopMode {
  kHostDriven,  ///< eager; the host reads the loop flag after every pass
  kFixed,       ///< a graph with max_iterations passes unrolled
  kWhileNode,   ///< a graph whose loop is a conditional while node
};
const char* to_string(LoopMode m);

/// One solver frame at a time in a given LoopMode (owning the graph cache and the WhileLoop).
class SolverRunner {
 public:
  SolverRunner(ContactSolver& solver, LoopMode mode, int n_envs);
  /// Enqueues one frame on `stream`, the same stream every time (the first few frames warm up and
  /// capture; host-driven frames wait for the GPU after every pass). `timers`, when given (the same
  /// buffer every time), is reset and filled every frame: row i = each env's time in pass i.
  void frame(cudaStream_t stream, cuda::DeviceTimerBuffer* timers = nullptr);
  LoopMode mode() const { return mode_; }
  const cuda::GraphCache& graphs() const { return *cache_; }
  const cuda::WhileLoop& loop() const { return loop_; }

 private:
  ContactSolver& solver_;
  LoopMode mode_;
  int n_envs_;
  cuda::WhileLoop loop_;
  std::unique_ptr<cuda::GraphCache> cache_;
};

}  // namespace simprof::engine
