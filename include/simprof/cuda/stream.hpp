// SPDX-License-Identifier: MIT
// RAII streams and events.
//
/* clang-format off */
//   simprof::cuda::Stream stream;                 // non-blocking, as capture requires
//   simprof::cuda::Event start, end;
//   start.record(stream);  kernel<<<g, b, 0, stream>>>(...);  end.record(stream);
//   end.synchronize();  float ms = end.elapsed_ms_since(start);
/* clang-format on */
#pragma once

#include <cuda_runtime_api.h>

#include "simprof/cuda/error.hpp"

namespace simprof::cuda {

/// A non-blocking stream (never synchronises with the legacy NULL stream), as capture requires.
class Stream {
 public:
  Stream() { SIMPROF_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const noexcept { return s_; }
  operator cudaStream_t() const noexcept { return s_; }
  void synchronize() const { SIMPROF_CUDA_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  explicit Event(unsigned flags = cudaEventDefault) {
    SIMPROF_CUDA_CHECK(cudaEventCreateWithFlags(&e_, flags));
  }
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const noexcept { return e_; }
  operator cudaEvent_t() const noexcept { return e_; }
  void record(cudaStream_t s) { SIMPROF_CUDA_CHECK(cudaEventRecord(e_, s)); }
  void synchronize() const { SIMPROF_CUDA_CHECK(cudaEventSynchronize(e_)); }
  /// Milliseconds from `start` to this event (both recorded and complete).
  float elapsed_ms_since(const Event& start) const {
    float ms = 0;
    SIMPROF_CUDA_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

}  // namespace simprof::cuda
