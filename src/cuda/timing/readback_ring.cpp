// SPDX-License-Identifier: MIT
#include "readback_ring.hpp"

namespace simprof::cuda::detail {

namespace {
// Slots start on a cache line: a record's 8-byte fields stay aligned whatever its size.
std::size_t aligned(std::size_t bytes) { return (bytes + 63) / 64 * 64; }
}  // namespace

ReadbackRing::ReadbackRing(std::size_t slots, std::size_t slot_bytes)
    : slot_bytes_(aligned(slot_bytes)),
      bytes_(slots * slot_bytes_, cudaHostAllocMapped),
      device_(bytes_.device_pointer()),
      slots_(slots) {
  arrived_.reserve(slots);
  for (std::size_t i = 0; i < slots; ++i) arrived_.emplace_back(cudaEventDisableTiming);
}

cudaError_t ReadbackRing::sent(cudaStream_t stream, std::uint64_t step) noexcept {
  const cudaError_t e = cudaEventRecord(arrived_[next_].get(), stream);
  if (e != cudaSuccess) return e;
  slots_[next_].step = step;
  slots_[next_].busy = true;
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  next_ = (next_ + 1) % slots_.size();
  return cudaSuccess;
}

}  // namespace simprof::cuda::detail
