// SPDX-License-Identifier: MIT
// Persistent device buffers and RAII streams/events.
//
// Why persistent buffers: a captured CUDA graph stores the raw device addresses its kernels were
// captured with. Replaying it reads and writes exactly those addresses again, so every input and
// output of a captured step must live at a fixed address for the graph's whole life. Allocate them
// once (DeviceBuffer), copy new inputs *into* them before a replay (copy_from_host) and results
// *out of* them after it; never hand a replayed graph a freshly allocated tensor.
//
//   simprof::cuda::DeviceBuffer<float> pos(n);          // one cudaMalloc, address fixed
//   pos.copy_from_host(host.data(), n, stream);           // staged into the same address
//   cache.run(key, [&](cudaStream_t s) { step<<<g, b, 0, s>>>(pos.data()); });
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "simprof/cuda/error.hpp"

namespace simprof::cuda {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    if (n) SIMPROF_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T)));
  }
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);  // never throws from a destructor
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }

  T* data() const noexcept { return p_; }
  std::size_t size() const noexcept { return n_; }
  std::size_t bytes() const noexcept { return n_ * sizeof(T); }

  void copy_from_host(const T* src, std::size_t n, cudaStream_t stream) {
    check_size(n);
    SIMPROF_CUDA_CHECK(cudaMemcpyAsync(p_, src, n * sizeof(T), cudaMemcpyHostToDevice, stream));
  }
  void copy_to_host(T* dst, std::size_t n, cudaStream_t stream) const {
    check_size(n);
    SIMPROF_CUDA_CHECK(cudaMemcpyAsync(dst, p_, n * sizeof(T), cudaMemcpyDeviceToHost, stream));
  }
  /// The whole buffer on the host (synchronises `stream`).
  std::vector<T> to_host(cudaStream_t stream) const {
    std::vector<T> out(n_);
    copy_to_host(out.data(), n_, stream);
    SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
    return out;
  }
  void fill_zero(cudaStream_t stream) {
    if (n_) SIMPROF_CUDA_CHECK(cudaMemsetAsync(p_, 0, bytes(), stream));
  }

 private:
  void check_size(std::size_t n) const;
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

[[noreturn]] void throw_buffer_size(std::size_t asked, std::size_t size);

template <class T>
void DeviceBuffer<T>::check_size(std::size_t n) const {
  if (n > n_) throw_buffer_size(n, n_);
}

}  // namespace simprof::cuda
