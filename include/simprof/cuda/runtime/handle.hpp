// SPDX-License-Identifier: MIT
// UniqueHandle: sole ownership of one CUDA runtime handle (graph, graph executable, stream, event),
// destroyed with its own destroy call when the owner goes, a throw included. Every CUDA handle in
// simprof lives in one of these (or in a class built from them: Stream, Event, DeviceBuffer,
// PinnedBuffer), so a constructor that throws halfway leaks nothing.
//
/* clang-format off */
//   simprof::cuda::GraphHandle graph;
//   SIMPROF_CUDA_CHECK(cudaStreamEndCapture(stream, graph.out()));
//   simprof::cuda::GraphExecHandle exec;
//   SIMPROF_CUDA_CHECK(cudaGraphInstantiate(exec.out(), graph.get(), 0));
/* clang-format on */
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

namespace simprof::cuda {

/// Sole ownership of a CUDA handle of type `T` (a graph, an executable, a stream, an event) that
/// `Destroy` releases when it goes; movable, not copyable.
template <class T, cudaError_t (*Destroy)(T)>
class UniqueHandle {
 public:
  UniqueHandle() noexcept = default;
  /// Takes ownership of `handle`.
  explicit UniqueHandle(T handle) noexcept : h_(handle) {}
  ~UniqueHandle() { reset(); }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  /// Takes `o`'s handle; `o` is left empty.
  UniqueHandle(UniqueHandle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  /// Destroys the handle held, then takes `o`'s; `o` is left empty.
  UniqueHandle& operator=(UniqueHandle&& o) noexcept {
    if (this != &o) reset(std::exchange(o.h_, nullptr));
    return *this;
  }

  /// The handle held (null: none); still owned.
  T get() const noexcept { return h_; }
  /// Whether a handle is held.
  explicit operator bool() const noexcept { return h_ != nullptr; }
  /// Destroys the handle held (if any) and returns where a create call writes the new one.
  T* out() noexcept {
    reset();
    return &h_;
  }
  /// Destroys the handle held (errors are ignored: a destructor must not throw) and takes `h`.
  void reset(T h = nullptr) noexcept {
    if (h_) Destroy(h_);
    h_ = h;
  }
  /// Gives the handle up without destroying it.
  [[nodiscard]] T release() noexcept { return std::exchange(h_, nullptr); }

 private:
  T h_ = nullptr;
};

/// An owned CUDA graph (cudaGraphDestroy).
using GraphHandle = UniqueHandle<cudaGraph_t, &cudaGraphDestroy>;
/// An owned executable graph (cudaGraphExecDestroy).
using GraphExecHandle = UniqueHandle<cudaGraphExec_t, &cudaGraphExecDestroy>;
/// An owned stream (cudaStreamDestroy).
using StreamHandle = UniqueHandle<cudaStream_t, &cudaStreamDestroy>;
/// An owned event (cudaEventDestroy).
using EventHandle = UniqueHandle<cudaEvent_t, &cudaEventDestroy>;

}  // namespace simprof::cuda
