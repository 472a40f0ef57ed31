// SPDX-License-Identifier: MIT
// The stamping timers' one ring of readings: a sampled step's stamps (DeviceStageTimer's step
// record, GraphKernelTimer's stamp row) are sent from the device into a page-locked slot, and read
// on the host in the order they were sent, once the slot's arrival event has completed. Private to
// src/cuda/timing.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/stream.hpp"

namespace simprof::cuda::detail {

class ReadbackRing {
 public:
  // `slots` slots of `slot_bytes` each, in mapped page-locked memory (a kernel may write them).
  ReadbackRing(std::size_t slots, std::size_t slot_bytes);

  std::size_t size() const noexcept { return slots_.size(); }
  // The slot the next reading goes to, and whether it is still taken (poll first).
  std::size_t next() const noexcept { return next_; }
  bool full() const noexcept { return slots_[next_].busy; }
  // A slot's memory, as the host and as the device see it.
  template <class T>
  T* host(std::size_t slot) const noexcept {
    return reinterpret_cast<T*>(bytes_.data() + slot * slot_bytes_);
  }
  template <class T>
  T* device(std::size_t slot) const noexcept {
    return reinterpret_cast<T*>(device_ + slot * slot_bytes_);
  }
  // The reading of `step` into next() was enqueued on `stream`: its arrival is recorded there and
  // the slot taken until it is read. An error leaves the slot free (nothing was sent).
  cudaError_t sent(cudaStream_t stream, std::uint64_t step) noexcept;
  // Slots taken, from any thread.
  std::size_t in_flight() const noexcept { return in_flight_.load(std::memory_order_relaxed); }
  cudaEvent_t arrival(std::size_t slot) const noexcept { return arrived_[slot].get(); }

  // The readings that arrived, oldest first: read(slot, step, arrived) for each, until one is still
  // on its way or `read` returns false (not yet: it stays for the next poll). `arrived` false: its
  // copy failed (the error is cleared), and the slot is free whatever `read` returns.
  template <class Read>
  void poll(Read&& read) noexcept {
    for (std::size_t k = 0; k < slots_.size(); ++k) {
      const std::size_t at = (next_ + k) % slots_.size();
      Slot& s = slots_[at];
      if (!s.busy) continue;
      const cudaError_t e = cudaEventQuery(arrived_[at].get());
      if (e == cudaErrorNotReady) return;  // the later ones are behind it
      if (e != cudaSuccess) (void)cudaGetLastError();
      if (!read(at, s.step, e == cudaSuccess) && e == cudaSuccess) return;
      s.busy = false;
      in_flight_.fetch_sub(1, std::memory_order_relaxed);
    }
  }

  // The arrival events of the slots taken for which keep(slot) holds: to wait on without a lock.
  template <class Keep>
  void arrivals(std::vector<cudaEvent_t>& out, Keep&& keep) const {
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].busy && keep(i)) out.push_back(arrived_[i].get());
  }

 private:
  struct Slot {
    std::uint64_t step = 0;
    bool busy = false;
  };
  std::size_t slot_bytes_;
  PinnedBuffer<unsigned char> bytes_;
  unsigned char* device_;
  std::vector<Slot> slots_;
  std::vector<Event> arrived_;
  std::size_t next_ = 0;
  std::atomic<std::size_t> in_flight_{0};
};

}  // namespace simprof::cuda::detail
