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

class Stream {
 public:
  /// A non-blocking stream (never synchronises with the legacy NULL stream), as capture requires.
  Stream() : Stream(cudaStreamNonBlocking) {}
  /// A stream with `flags` (cudaStreamDefault: blocking) and `priority` (lower numbers are higher
  /// priorities: see cudaDeviceGetStreamPriorityRange).
  explicit Stream(unsigned flags, int priority = 0) {
    SIMPROF_CUDA_CHECK(cudaStreamCreateWithPriority(s_.out(), flags, priority));
  }
  cudaStream_t get() const noexcept { return s_.get(); }
  operator cudaStream_t() const noexcept { return s_.get(); }
  void synchronize() const { SIMPROF_CUDA_CHECK(cudaStreamSynchronize(s_.get())); }

 private:
  StreamHandle s_;
};

class Event {
 public:
  explicit Event(unsigned flags = cudaEventDefault) {
    SIMPROF_CUDA_CHECK(cudaEventCreateWithFlags(e_.out(), flags));
  }
  cudaEvent_t get() const noexcept { return e_.get(); }
  operator cudaEvent_t() const noexcept { return e_.get(); }
  void record(cudaStream_t s) { SIMPROF_CUDA_CHECK(cudaEventRecord(e_.get(), s)); }
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
/// The device `stream` belongs to (cudaStreamGetDevice).
int stream_device(cudaStream_t stream);
/// Binds a tool to one device: returns the device of `stream`, which must be the current one —
/// what `who` makes (events, buffers, graphs) is made on the current device. Throws
/// std::invalid_argument naming `who` and both devices otherwise.
int bind_device(cudaStream_t stream, const char* who);

}  // namespace simprof::cuda
