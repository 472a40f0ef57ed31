// SPDX-License-Identifier: MIT
// The stamping timers' one engine (DeviceStageTimer's stage stamps and GraphKernelTimer's node
// stamps are two strategies over it): device records the stamps write, the tag the stream writes
// before a step's work (a stamp of a replayed graph finds its record through it), and the
// publication: once a stamped step's work is done, the step's record goes into a page-locked
// reading (Publish: by the strategy's kernel beside the step, or by a copy on its stream), and the
// readings are read in the order they were sent.
// Private to src/cuda/timing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "readback_ring.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/handle.hpp"
#include "simprof/cuda/runtime/stream.hpp"

namespace simprof::cuda::detail {

/// The tag that marks a step no stamp records (the stamps return at once).
constexpr unsigned kNotTimed = 0xffffffffu;

struct PublishKernel {
  const void* fn = nullptr;  ///< the strategy's publish kernel
  unsigned threads = 1;      ///< its block (one block)
  void** args = nullptr;     ///< its arguments: read at every publish(), so set them before it
};

/// How a step's record is published. kBeside: the strategy's publish kernel, on the engine's side
/// stream once the step's work is done (off the path of the next step; each step has a record of
/// its own, found by the tag; the kernel reads how much of it to copy on the device). kOnStream:
/// one record, reused by every step (no tag to load in a stamp), copied (cudaMemcpyAsync) on the
/// step's stream after its work; the host says how much.
enum class Publish { kBeside, kOnStream };

class StampRing {
 public:
  /// `records` device records of `record_bytes` each (zeroed; a multiple of 8), and `readings`
  /// page-locked readings of `reading_bytes` each; the tag reads kNotTimed. Made on the current
  /// device, which must be `stream`'s (the timer binds it).
  StampRing(cudaStream_t stream, std::size_t records, std::size_t record_bytes,
            std::size_t readings, std::size_t reading_bytes, Publish where);
  ~StampRing();
  StampRing(const StampRing&) = delete;
  StampRing& operator=(const StampRing&) = delete;

  /// A record's stride: record_bytes, as the strategies' kernels index them (recs[k % ring]).
  std::size_t record_bytes() const noexcept { return record_bytes_; }
  template <class T>
  T* record(std::size_t i) const noexcept {
    return reinterpret_cast<T*>(records_.data() + i * record_bytes_);
  }
  const unsigned* tag() const noexcept { return tag_.data(); }
  /// The tag written by `stream` itself, in its order (cuStreamWriteValue32): the driver's result
  /// (0: done; describe_driver() names another).
  int write_tag(cudaStream_t stream, unsigned value) noexcept;

  ReadbackRing& readings() noexcept { return readings_; }
  const ReadbackRing& readings() const noexcept { return readings_; }
  /// kBeside's publish kernel (once, before the first publish(): its arguments are read now).
  void set_publication(PublishKernel publish);
  /// Where the next publication writes, as the device sees it (a publish kernel's argument).
  template <class T>
  T* next_reading() const noexcept {
    return readings_.device<T>(readings_.next());
  }
  /// Step `step`'s publication into next_reading(), after the work queued on `stream` so far: the
  /// publish kernel with its arguments as they are now (kBeside), or the record's first `bytes`
  /// (kOnStream). On failure `what` names the call; a full ring of readings is refused
  /// (cudaErrorNotReady: the caller checks readings().full() first).
  cudaError_t publish(cudaStream_t stream, std::uint64_t step, std::size_t bytes,
                      const char*& what) noexcept;
  /// Waits until every publication sent has arrived.
  void synchronize();

 private:
  std::size_t record_bytes_;
  DeviceBuffer<unsigned char> records_;
  DeviceBuffer<unsigned> tag_;
  ReadbackRing readings_;
  std::optional<Stream> side_;  // kBeside's
  Event step_done_{cudaEventDisableTiming};
  // The publication: a one-node graph. A plain launch of it leaks host memory inside CUPTI once
  // CUPTI is loaded (docs/reliability.md); a graph launch does not.
  GraphHandle graph_;  // kept: SetParams names its node, not the executable's
  GraphExecHandle exec_;
  cudaGraphNode_t node_ = nullptr;
  cudaKernelNodeParams params_{};
};

}  // namespace simprof::cuda::detail
