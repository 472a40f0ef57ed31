// SPDX-License-Identifier: MIT
// WhileLoop: `do { body } while (condition)` where the body's last kernel decides on the GPU
// whether the loop goes on. A convergence loop (a contact solver iterating until the residual is
// small) then needs no round trip to the host.
//
/* clang-format off */
//   simprof::cuda::WhileLoop loop;
//   cache.run({n_envs}, [&](cudaStream_t s) {
//     loop.enqueue(s, [&](cudaStream_t body, const simprof::cuda::LoopCondition& c) {
//       iterate_kernel<<<blocks, 256, 0, body>>>(x, residual);
//       check_kernel<<<1, 1, 0, body>>>(residual, tol, c);  // set_condition(c, residual > tol)
//     });
//   });
/* clang-format on */
//
// How it runs depends on the stream:
//   * capturing (inside GraphCache/StepGraph or any stream capture): the body is captured once into
//     the body graph of a CUDA conditional while node (CUDA >= 12.4). A replay runs every iteration
//     on the device; the host launches one graph and never looks at the condition.
//   * not capturing (eager runs, a GraphCache warm-up): host-driven. After each body the flag is
//     copied to pinned memory and the stream synchronised; the host decides. This is the classic
//     loop the while node replaces, kept so the same step runs eagerly.
// Both paths run the same body kernels in the same order, so they compute the same numbers and the
// same iteration counts.
//
// set_condition() must be called by exactly one thread of the body's last kernel in every
// iteration (concurrent calls race; a body that never calls it loops forever on the device: bound
// the loop in the condition, e.g. `residual > tol && iteration < max_iterations`).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>

#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/stream.hpp"

namespace simprof::cuda {

/// Whether conditional while nodes can be used: the runtime and the driver are CUDA >= 12.4.
bool conditional_nodes_supported() noexcept;

/// What a body kernel uses to say whether the loop goes on. Pass it to the kernel by value.
struct LoopCondition {
  unsigned long long handle = 0;  ///< cudaGraphConditionalHandle, when in_graph
  unsigned* flag = nullptr;       ///< device memory: the value last set (the host-driven path)
  /// Nonzero: the loop is a captured while node (the handle is set).
  int in_graph = 0;
};

#if defined(__CUDACC__)
/// Sets whether the loop runs the body again. One thread, once per iteration, in the body's last
/// kernel.
__device__ inline void set_condition(const LoopCondition& c, bool again) {
  *c.flag = again ? 1u : 0u;
#if CUDART_VERSION >= 12040
  if (c.in_graph) cudaGraphSetConditional(static_cast<cudaGraphConditionalHandle>(c.handle), again);
#endif
}
#endif

/// How a WhileLoop's loops ran so far (WhileLoop::counters()).
struct WhileLoopCounters {
  std::uint64_t captured = 0;         ///< loops recorded as conditional while nodes
  std::uint64_t host_driven = 0;      ///< loops run eagerly, decided by the host
  std::uint64_t host_iterations = 0;  ///< iterations of the host-driven loops
};

/// `do { body } while (condition)` decided on the GPU: a conditional while node when captured,
/// a host-driven loop otherwise (see the header comment).
class WhileLoop {
 public:
  /// One iteration: enqueues the body's kernels on the stream given; its last kernel calls
  /// set_condition() with the condition.
  using Body = std::function<void(cudaStream_t, const LoopCondition&)>;

  /// `max_host_iterations` bounds the host-driven path (std::runtime_error past it, naming the
  /// count): a safety net, the condition should bound the loop itself. Throws std::invalid_argument
  /// for a value < 1.
  explicit WhileLoop(int max_host_iterations = 1 << 20);
  WhileLoop(const WhileLoop&) = delete;
  WhileLoop& operator=(const WhileLoop&) = delete;

  /// Enqueues the loop on `stream` (see the header comment). Returns the iterations run when
  /// host-driven, 0 when captured. Throws std::runtime_error when `stream` is capturing and
  /// conditional nodes are not supported, CudaError for a failing CUDA call.
  int enqueue(cudaStream_t stream, const Body& body);

  /// How the loops enqueued so far ran.
  const WhileLoopCounters& counters() const noexcept { return counters_; }

 private:
  int max_host_iterations_;
  Stream body_stream_;                // captures the body graph
  DeviceBuffer<unsigned> flag_;       // the condition the body last set
  PinnedBuffer<unsigned> host_flag_;  // where the host-driven loop reads it
  WhileLoopCounters counters_;
};

}  // namespace simprof::cuda
