// SPDX-License-Identifier: MIT
#include "simprof/cuda/timer_buffer.hpp"

#include <fmt/format.h>

#include "simprof/cuda/error.hpp"

namespace simprof::cuda {

double clock_freq_hz(int device) {
  if (device < 0) SIMPROF_CUDA_CHECK(cudaGetDevice(&device));
  int khz = 0;
  SIMPROF_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device));
  return static_cast<double>(khz) * 1e3;
}

DeviceTimerBuffer::DeviceTimerBuffer(std::vector<std::string> labels, int n_envs, TimerUnit unit,
                                     int device)
    : labels_(std::move(labels)), n_envs_(n_envs), unit_(unit) {
  if (n_envs < 1)
    throw std::invalid_argument(
        fmt::format("simprof: DeviceTimerBuffer n_envs = {} (expected >= 1)", n_envs));
  ticks_per_second_ = unit == TimerUnit::kNanoseconds ? 1e9 : clock_freq_hz(device);
  bytes_ = static_cast<std::size_t>(labels_.rows()) * static_cast<std::size_t>(n_envs) *
           sizeof(std::uint64_t);
  SIMPROF_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&dev_), bytes_));
  SIMPROF_CUDA_CHECK(cudaMemset(dev_, 0, bytes_));
  for (int i = 0; i < 2; ++i) {
    SIMPROF_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&host_[i]), bytes_));
    SIMPROF_CUDA_CHECK(cudaEventCreateWithFlags(&done_[i], cudaEventDisableTiming));
  }
}

DeviceTimerBuffer::~DeviceTimerBuffer() {
  for (int i = 0; i < 2; ++i) {
    if (done_[i]) {
      cudaEventSynchronize(done_[i]);
      cudaEventDestroy(done_[i]);
    }
    if (host_[i]) cudaFreeHost(host_[i]);
  }
  if (dev_) cudaFree(dev_);
}

void DeviceTimerBuffer::reset(cudaStream_t stream) {
  SIMPROF_CUDA_CHECK(cudaMemsetAsync(dev_, 0, bytes_, stream));
}

void DeviceTimerBuffer::read_async(cudaStream_t stream) {
  const int i = static_cast<int>(reads_ % 2);
  SIMPROF_CUDA_CHECK(cudaMemcpyAsync(host_[i], dev_, bytes_, cudaMemcpyDeviceToHost, stream));
  SIMPROF_CUDA_CHECK(cudaEventRecord(done_[i], stream));
  seq_[i] = ++reads_;
}

TimerFrame DeviceTimerBuffer::frame_of(int i) const noexcept {
  return TimerFrame{&labels_, host_[i], labels_.rows(), n_envs_, unit_, ticks_per_second_};
}

std::optional<TimerFrame> DeviceTimerBuffer::latest() {
  int best = -1;
  for (int i = 0; i < 2; ++i) {
    if (seq_[i] <= returned_) continue;
    const cudaError_t q = cudaEventQuery(done_[i]);
    if (q == cudaErrorNotReady) continue;
    if (q != cudaSuccess) throw_cuda_error(q, "cudaEventQuery(done)", __FILE__, __LINE__);
    if (best < 0 || seq_[i] > seq_[best]) best = i;
  }
  if (best < 0) return std::nullopt;
  returned_ = seq_[best];
  return frame_of(best);
}

TimerFrame DeviceTimerBuffer::read(cudaStream_t stream) {
  read_async(stream);
  const int i = static_cast<int>((reads_ - 1) % 2);
  SIMPROF_CUDA_CHECK(cudaEventSynchronize(done_[i]));
  returned_ = seq_[i];
  return frame_of(i);
}

}  // namespace simprof::cuda
