// SPDX-License-Identifier: MIT
// RAII streams and events, movable, destroyed with their owner.
//
/* clang-format off */
//   simprof::cuda::Stream stream;                 // non-blocking, as capture requires
//   simprof::cuda::Event start, end;
//   start.record(stream);  my_kernel<<<grid, block, 0, stream>>>();  end.record(stream);
//   end.synchronize();  float ms = end.elapsed_ms_since(start);
/* clang-format on */
#pragma once

#include <cuda_runtime_api.h>

#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/runtime/handle.hpp"

namespace simprof::cuda {

/// An owned CUDA stream, destroyed with the object; converts to cudaStream_t.
class Stream {
 public:
  /// A non-blocking stream (never synchronises with the legacy NULL stream), as capture requires.
  Stream() : Stream(cudaStreamNonBlocking) {}
  /// A stream with `flags` (cudaStreamDefault: blocking) and `priority` (lower numbers are higher
  /// priorities: see cudaDeviceGetStreamPriorityRange).
  explicit Stream(unsigned flags, int priority = 0) {
    SIMPROF_CUDA_CHECK(cudaStreamCreateWithPriority(s_.out(), flags, priority));
  }
  /// The stream (still owned).
  cudaStream_t get() const noexcept { return s_.get(); }
  /// The stream, for CUDA calls and kernel launches (still owned).
  operator cudaStream_t() const noexcept { return s_.get(); }
  /// Waits until the stream's work is done; throws CudaError on failure.
  void synchronize() const { SIMPROF_CUDA_CHECK(cudaStreamSynchronize(s_.get())); }

 private:
  StreamHandle s_;
};

/// An owned CUDA event, destroyed with the object; converts to cudaEvent_t.
class Event {
 public:
  /// An event with `flags` (cudaEventDefault: timing; cudaEventDisableTiming: ordering only).
  explicit Event(unsigned flags = cudaEventDefault) {
    SIMPROF_CUDA_CHECK(cudaEventCreateWithFlags(e_.out(), flags));
  }
  /// The event (still owned).
  cudaEvent_t get() const noexcept { return e_.get(); }
  /// The event, for CUDA calls (still owned).
  operator cudaEvent_t() const noexcept { return e_.get(); }
  /// Records the event on stream `s` (cudaEventRecord).
  void record(cudaStream_t s) { SIMPROF_CUDA_CHECK(cudaEventRecord(e_.get(), s)); }
  /// Waits until the work before the event's last record is done.
  void synchronize() const { SIMPROF_CUDA_CHECK(cudaEventSynchronize(e_.get())); }
  /// Milliseconds from `start` to this event (both recorded and complete).
  float elapsed_ms_since(const Event& start) const {
    float ms = 0;
    SIMPROF_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), e_.get()));
    return ms;
  }

 private:
  EventHandle e_;
};

/// The device current on this thread (cudaGetDevice).
int current_device();
/// The current device's greatest stream priority (0 where it cannot be read).
int greatest_priority() noexcept;
/// The device `stream` belongs to (cudaStreamGetDevice).
int stream_device(cudaStream_t stream);
/// Binds a tool to one device: returns the device of `stream`, which must be the current one —
/// what `who` makes (events, buffers, graphs) is made on the current device. Throws
/// std::invalid_argument naming `who` and both devices otherwise.
int bind_device(cudaStream_t stream, const char* who);

}  // namespace simprof::cuda
