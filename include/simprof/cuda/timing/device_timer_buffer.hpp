// SPDX-License-Identifier: MIT
// DeviceTimerBuffer: the owner of a (rows, n_envs) timer buffer on the GPU.
//
/* clang-format off */
//   simprof::cuda::DeviceTimerBuffer timers({"solve", "contacts"}, n_envs);
//   solver<<<grid, block, 0, stream>>>(n_envs, timers.view());   // kernels call TimerChain::lap
//   timers.read_async(stream);                                // copy out, without waiting
//   if (auto f = timers.latest()) stats.update(*f);           // the newest finished copy, if any
/* clang-format on */
//
// Readings taken by kernels inside a captured graph are taken again at every replay: call
// read_async() after each replay to see them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/timers/timer_buffer.hpp"

namespace simprof::cuda {

/// The nominal SM clock of `device` (the current one for -1), in Hz, from cudaDevAttrClockRate
/// (CUDA 13 removed cudaDeviceProp::clockRate). Cycles divided by it are approximate seconds: the
/// SM clock idles far lower and boosts up to it under load.
double clock_freq_hz(int device = -1);

/// A timer table (rows of labels by environments) in device memory that kernels stamp through a
/// TimerView, read back to the host without stalling the stream.
class DeviceTimerBuffer : public TimerLayout {
 public:
  /// Throws std::invalid_argument for no labels or n_envs < 1, CudaError when allocation fails.
  DeviceTimerBuffer(std::vector<std::string> labels, int n_envs,
                    TimerUnit unit = TimerUnit::kCycles, int device = -1);
  ~DeviceTimerBuffer();
  DeviceTimerBuffer(const DeviceTimerBuffer&) = delete;
  DeviceTimerBuffer& operator=(const DeviceTimerBuffer&) = delete;

  /// The device view for kernels; the address is fixed for the buffer's life (capturable).
  TimerView view() const noexcept { return view_of(dev_.data()); }
  /// Zeroes the buffer on `stream` (capturable).
  void reset(cudaStream_t stream);
  /// Copies the buffer into one of two page-locked host buffers on `stream`, without waiting. A
  /// frame returned by latest() stays valid until the second read_async() after it.
  void read_async(cudaStream_t stream);
  /// The newest finished copy not returned before (so no frame is counted twice), or nullopt. Never
  /// waits.
  std::optional<TimerFrame> latest();
  /// read_async(), then waits for it: the simple, blocking read.
  TimerFrame read(cudaStream_t stream);

  // labels(), rows(), n_envs(), unit(), ticks_per_second() (clock_freq_hz() for cycles): from
  // TimerLayout, as the host TimerBuffer has them.

 private:
  DeviceBuffer<std::uint64_t> dev_;
  PinnedBuffer<std::uint64_t> host_[2];
  Event done_[2] = {Event(cudaEventDisableTiming), Event(cudaEventDisableTiming)};
  std::uint64_t seq_[2] = {0, 0};  // which read filled each host buffer (0: none)
  std::uint64_t reads_ = 0;
  std::uint64_t returned_ = 0;  // the newest read latest() has returned
};

}  // namespace simprof::cuda
