// SPDX-License-Identifier: MIT
// DeviceAllocations: every CUDA device allocation and free made through the runtime or the driver
// (cudaMalloc, cudaMallocPitch, cudaMallocManaged, cudaMallocAsync, cudaMallocFromPoolAsync, their
// cuMem* counterparts, and the frees), counted on the calling thread through CUPTI callbacks: the
// device side of a MemoryTracker (simprof/memory/tracker.hpp).
//
/* clang-format off */
//   simprof::cuda::DeviceAllocations dev;            // before the buffers you want counted
//   simprof::MemoryTracker mem(prof, &dev, &simprof::host_allocations());
/* clang-format on */
//
// In use and peak: bytes allocated since the counter was made and not yet freed, kept exactly from
// the calls themselves — no cudaMemGetInfo (a synchronisation) on the step's path. Memory freed
// that was allocated before the counter existed counts as a free of 0 bytes. Allocations inside a
// CUDA graph's memory nodes are the graph's (GraphCache::graph_memory()), not API calls, and are
// not counted here. Shares CUPTI's one subscription with the KernelTracer; one per process. When
// CUPTI cannot be had (another tool holds it) the counter stays at 0, says why once, and enabled()
// is false.
#pragma once

#include <memory>
#include <string>

#include "simprof/memory/tracker.hpp"

namespace simprof::cuda {

/// Counts CUDA device allocations and frees (runtime and driver) through CUPTI callbacks: the
/// device side of a MemoryTracker (see the header comment). One per process.
class DeviceAllocations final : public AllocSource {
 public:
  /// Subscribes to CUPTI; when it cannot, the counts stay 0 and enabled() is false.
  DeviceAllocations();
  ~DeviceAllocations() override;
  DeviceAllocations(const DeviceAllocations&) = delete;
  DeviceAllocations& operator=(const DeviceAllocations&) = delete;
  /// The process's DeviceAllocations for every tracker that asks: the one alive, or a new one
  /// (CUPTI counts for one at a time); it goes with its last holder.
  static std::shared_ptr<DeviceAllocations> shared();

  /// Whether allocations are being counted (CUPTI could be subscribed to).
  bool enabled() const noexcept;
  /// Why counting is off (empty when enabled()).
  const std::string& disabled_reason() const noexcept;

  AllocCounts counts() const noexcept override;
  std::int64_t in_use_bytes() const noexcept override;
  std::int64_t peak_bytes() const noexcept override;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace simprof::cuda
