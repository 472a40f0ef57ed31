// SPDX-License-Identifier: MIT
#include "simprof/cuda/timing/device_timer_buffer.hpp"

#include <fmt/format.h>

#include "simprof/cuda/runtime/error.hpp"

namespace simprof::cuda {

double clock_freq_hz(int device) {
  if (device < 0) SIMPROF_CUDA_CHECK(cudaGetDevice(&device));
  int khz = 0;
  SIMPROF_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device));
  return static_cast<double>(khz) * 1e3;
}

DeviceTimerBuffer::DeviceTimerBuffer(std::vector<std::string> labels, int n_envs, TimerUnit unit,
                                     int device)
    : TimerLayout("DeviceTimerBuffer", std::move(labels), n_envs, unit),
      dev_(elements()),
      host_{PinnedBuffer<std::uint64_t>(elements()), PinnedBuffer<std::uint64_t>(elements())} {
  if (unit == TimerUnit::kCycles) set_cycles_per_second(clock_freq_hz(device));
  // Zeroed before any stream can read it: a cudaMemset alone is not ordered before the work of a
  // non-blocking stream (compute-sanitizer's initcheck saw a read-back overtake it).
  SIMPROF_CUDA_CHECK(cudaMemsetAsync(dev_.data(), 0, dev_.bytes(), nullptr));
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

DeviceTimerBuffer::~DeviceTimerBuffer() {
  // A copy into a host buffer may be in flight: it must land before the buffer is freed.
  for (auto& e : done_) cudaEventSynchronize(e.get());
}

void DeviceTimerBuffer::reset(cudaStream_t stream) { dev_.fill_zero(stream); }

void DeviceTimerBuffer::read_async(cudaStream_t stream) {
  const int i = static_cast<int>(reads_ % 2);
  SIMPROF_CUDA_CHECK(
      cudaMemcpyAsync(host_[i].data(), dev_.data(), dev_.bytes(), cudaMemcpyDeviceToHost, stream));
  done_[i].record(stream);
  seq_[i] = ++reads_;
}

std::optional<TimerFrame> DeviceTimerBuffer::latest() {
  int best = -1;
  for (int i = 0; i < 2; ++i) {
    if (seq_[i] <= returned_) continue;
    const cudaError_t q = cudaEventQuery(done_[i].get());
    if (q == cudaErrorNotReady) continue;
    if (q != cudaSuccess) throw_cuda_error(q, "cudaEventQuery(done)", __FILE__, __LINE__);
    if (best < 0 || seq_[i] > seq_[best]) best = i;
  }
  if (best < 0) return std::nullopt;
  returned_ = seq_[best];
  return frame_of(host_[best].data());
}

TimerFrame DeviceTimerBuffer::read(cudaStream_t stream) {
  read_async(stream);
  const int i = static_cast<int>((reads_ - 1) % 2);
  done_[i].synchronize();
  returned_ = seq_[i];
  return frame_of(host_[i].data());
}

}  // namespace simprof::cuda
