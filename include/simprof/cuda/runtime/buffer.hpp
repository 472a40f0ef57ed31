// SPDX-License-Identifier: MIT
// Persistent device buffers and page-locked host buffers, freed with their owner.
//
// Why persistent buffers: a captured CUDA graph stores the raw device addresses its kernels were
// captured with. Replaying it reads and writes exactly those addresses again, so every input and
// output of a captured step must live at a fixed address for the graph's whole life. Allocate them
// once (DeviceBuffer), copy new inputs *into* them before a replay (copy_from_host) and results
// *out of* them after it; never hand a replayed graph a freshly allocated tensor.
//
/* clang-format off */
//   simprof::cuda::DeviceBuffer<float> pos(n);          // one cudaMalloc, address fixed
//   pos.copy_from_host(host.data(), n, stream);         // staged into the same address
//   cache.run({n_envs}, [&](cudaStream_t s) { step<<<grid, block, 0, s>>>(pos.data()); });
/* clang-format on */
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

#include "simprof/cuda/runtime/error.hpp"

namespace simprof::cuda {

/// Throws std::invalid_argument: a copy of `asked` elements into or out of a buffer of `size`.
[[noreturn]] void throw_buffer_size(std::size_t asked, std::size_t size);

namespace detail {

// Sole ownership of `n` elements of memory that `Free` gives back; movable, not copyable. The base
// of DeviceBuffer (cudaFree) and PinnedBuffer (cudaFreeHost).
template <class T, cudaError_t (*Free)(void*)>
class OwnedArray {
 public:
  OwnedArray() = default;
  ~OwnedArray() {
    if (p_) Free(static_cast<void*>(p_));  // never throws from a destructor
  }
  OwnedArray(const OwnedArray&) = delete;
  OwnedArray& operator=(const OwnedArray&) = delete;
  OwnedArray(OwnedArray&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  OwnedArray& operator=(OwnedArray&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }

  T* data() const noexcept { return p_; }
  std::size_t size() const noexcept { return n_; }
  std::size_t bytes() const noexcept { return n_ * sizeof(T); }

 protected:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace detail

/// `n` elements of `T` in device memory (cudaMalloc), freed with the object; movable, not
/// copyable. data(), size() and bytes() give the pointer and the extent.
template <class T>
class DeviceBuffer : public detail::OwnedArray<T, &cudaFree> {
 public:
  DeviceBuffer() = default;
  /// `n` uninitialised elements (none for 0).
  explicit DeviceBuffer(std::size_t n) {
    if (n) SIMPROF_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&this->p_), n * sizeof(T)));
    this->n_ = n;
  }

  /// Enqueues a copy of the first `n` elements from `src` on `stream` (asynchronous); throws
  /// when `n` exceeds the size.
  void copy_from_host(const T* src, std::size_t n, cudaStream_t stream) {
    check_size(n);
    SIMPROF_CUDA_CHECK(
        cudaMemcpyAsync(this->p_, src, n * sizeof(T), cudaMemcpyHostToDevice, stream));
  }
  /// Enqueues a copy of the first `n` elements to `dst` on `stream` (asynchronous); throws when
  /// `n` exceeds the size.
  void copy_to_host(T* dst, std::size_t n, cudaStream_t stream) const {
    check_size(n);
    SIMPROF_CUDA_CHECK(
        cudaMemcpyAsync(dst, this->p_, n * sizeof(T), cudaMemcpyDeviceToHost, stream));
  }
  /// The whole buffer on the host (synchronises `stream`).
  std::vector<T> to_host(cudaStream_t stream) const {
    std::vector<T> out(this->n_);
    copy_to_host(out.data(), this->n_, stream);
    SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
    return out;
  }
  /// Enqueues zeroing every byte on `stream` (cudaMemsetAsync).
  void fill_zero(cudaStream_t stream) {
    if (this->n_) SIMPROF_CUDA_CHECK(cudaMemsetAsync(this->p_, 0, this->bytes(), stream));
  }

 private:
  void check_size(std::size_t n) const {
    if (n > this->n_) throw_buffer_size(n, this->n_);
  }
};

/// Page-locked host memory (cudaHostAlloc): the target of asynchronous copies, and with
/// cudaHostAllocMapped memory the device reads and writes directly (device_pointer()).
///
///   simprof::cuda::PinnedBuffer<unsigned> flag(1, cudaHostAllocMapped);
///   kernel<<<1, 1, 0, s>>>(flag.device_pointer());   // the host watches flag[0]
template <class T>
class PinnedBuffer : public detail::OwnedArray<T, &cudaFreeHost> {
 public:
  PinnedBuffer() = default;
  /// `n` elements, zeroed. `flags`: cudaHostAllocDefault, cudaHostAllocMapped, ...
  explicit PinnedBuffer(std::size_t n, unsigned flags = cudaHostAllocDefault) {
    if (n) {
      SIMPROF_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&this->p_), n * sizeof(T), flags));
      std::memset(static_cast<void*>(this->p_), 0, n * sizeof(T));
    }
    this->n_ = n;
  }

  /// Element `i`, on the host (unchecked).
  T& operator[](std::size_t i) const noexcept { return this->p_[i]; }
  /// The address kernels use for mapped memory (cudaHostAllocMapped); throws CudaError otherwise.
  T* device_pointer() const {
    void* d = nullptr;
    SIMPROF_CUDA_CHECK(cudaHostGetDevicePointer(&d, static_cast<void*>(this->p_), 0));
    return static_cast<T*>(d);
  }
};

}  // namespace simprof::cuda
