// SPDX-License-Identifier: MIT
// MemoryTracker: allocations and bytes per step and per stage, on the device (through an
// AllocSource: the CUDA backend's cuda::DeviceAllocations counts every CUDA allocation API call)
// and on the host (HostAllocations: a counting hook the user installs), the device memory in use at
// step ends and its peak, and one warning when a step after the warm-up allocates on the device —
// such a step cannot be captured into a CUDA graph as it is. Off unless made; as a TraceSource it
// adds counter tracks ("device memory in use", "device allocations") to the trace windows.
//
/* clang-format off */
//   simprof::cuda::DeviceAllocations dev;               // CUPTI callbacks on the CUDA alloc calls
//   simprof::MemoryTracker mem(prof, &dev, &simprof::host_allocations());
//   auto joined = session.add_source(&mem);             // optional: counters in its trace
//   for (int i = 0; i < n; ++i) { auto step = prof.step(); engine.step(); }
//   fmt::print("{}", simprof::stage_table(prof, mem));  // + allocations and bytes per stage
/* clang-format on */
//
// Attribution: a stage's counts are what was allocated between its begin and its end (its
// children's included, as its time includes theirs); the step's, between the step's begin and end.
// The hot path reads the sources' counters (a few relaxed atomic loads) at every stage boundary and
// allocates nothing once every stage has been seen.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "simprof/profiler/listener.hpp"
#include "simprof/trace/session.hpp"

namespace simprof {

class StepProfiler;

/// Cumulative counts of one allocator: they only grow.
struct AllocCounts {
  /// Allocation calls.
  std::uint64_t allocs = 0;
  /// Bytes those calls allocated.
  std::uint64_t alloc_bytes = 0;
  /// Free calls.
  std::uint64_t frees = 0;
  /// Bytes those calls freed (0 for a free that does not say).
  std::uint64_t free_bytes = 0;

  /// Adds `o`'s counts, field by field.
  AllocCounts& operator+=(const AllocCounts& o) noexcept;
  friend AllocCounts operator-(AllocCounts a, const AllocCounts& b) noexcept;
  friend bool operator==(const AllocCounts& a, const AllocCounts& b) noexcept {
    return a.allocs == b.allocs && a.alloc_bytes == b.alloc_bytes && a.frees == b.frees &&
           a.free_bytes == b.free_bytes;
  }
};

/// Where a tracker reads allocations: cheap, thread-safe, never throws.
class AllocSource {
 public:
  virtual ~AllocSource() = default;
  /// The allocations and frees counted so far.
  virtual AllocCounts counts() const noexcept = 0;
  /// Bytes allocated through this source and not yet freed (-1: unknown).
  virtual std::int64_t in_use_bytes() const noexcept { return -1; }
  /// The most bytes ever in use through this source (-1: unknown).
  virtual std::int64_t peak_bytes() const noexcept { return -1; }
};

/// The host heap, counted by a hook the user installs: replace the global operator new/delete in
/// one translation unit of the program and call note_alloc()/note_free() from them
/// (SIMPROF_COUNT_HOST_ALLOCATIONS() in simprof/memory/host_hook.hpp writes those for you). Without
/// the hook, the counts stay 0: nothing is ever replaced behind the user's back.
class HostAllocations final : public AllocSource {
 public:
  /// Counts one allocation of `bytes` (called by the hook's operator new).
  void note_alloc(std::size_t bytes) noexcept {
    allocs_.fetch_add(1, std::memory_order_relaxed);
    alloc_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }
  /// `bytes`: 0 when the deallocation does not say (operator delete without a size).
  void note_free(std::size_t bytes) noexcept {
    frees_.fetch_add(1, std::memory_order_relaxed);
    free_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }
  AllocCounts counts() const noexcept override;
  /// Whether a hook has called note_alloc() yet.
  bool hooked() const noexcept { return allocs_.load(std::memory_order_relaxed) != 0; }

 private:
  std::atomic<std::uint64_t> allocs_{0}, alloc_bytes_{0}, frees_{0}, free_bytes_{0};
};

/// The process's host counter (what SIMPROF_COUNT_HOST_ALLOCATIONS() feeds).
HostAllocations& host_allocations() noexcept;

/// Which allocations a MemoryTracker figure is of: the device's or the host's.
enum class MemorySide { kDevice, kHost };

/// When a MemoryTracker warns, and how many counter samples it keeps per trace window.
struct MemoryOptions {
  /// Steps after which a device allocation inside a step is warned about (once): the warm-up of a
  /// graph cache (3 steps and a capture by default) allocates legitimately.
  std::uint64_t warmup_steps = 10;
  /// Samples ("device memory in use", "device allocations") kept per trace window; beyond,
  /// dropped and counted.
  std::size_t max_counter_samples = 4096;
};

/// The steady-state device allocation warned about: the first step after the warm-up that
/// allocated, the innermost stage that did ("" outside any stage) and what it allocated.
struct SteadyAllocation {
  /// The step's number.
  std::uint64_t step = 0;
  /// The innermost stage that allocated ("": outside any stage).
  std::string stage;
  /// Device allocations of that stage in the step (the whole step's outside any stage).
  std::uint64_t allocs = 0;
  /// Bytes those allocations asked for.
  std::uint64_t bytes = 0;
};

/// Allocations and bytes per step and per stage, device and host, device memory in use and its
/// peak, and one warning for a step that allocates on the device after the warm-up (see the
/// header comment).
class MemoryTracker final : public StepListener, public TraceSource {
 public:
  /// Either source may be null (not counted). Registers with `prof`; unregisters when destroyed.
  MemoryTracker(StepProfiler& prof, const AllocSource* device, const AllocSource* host,
                MemoryOptions options = {});
  ~MemoryTracker() override;
  MemoryTracker(const MemoryTracker&) = delete;
  MemoryTracker& operator=(const MemoryTracker&) = delete;

  /// What `stage` (kStepStage for whole steps) allocated, summed over the completed steps it ran
  /// in.
  AllocCounts total(StageId stage, MemorySide side) const noexcept;
  /// total() by name ("step" for whole steps).
  AllocCounts total(std::string_view stage, MemorySide side) const noexcept;
  /// Completed steps in which `stage` ran (0: never).
  std::uint64_t steps(StageId stage) const noexcept;
  /// steps() by name.
  std::uint64_t steps(std::string_view stage) const noexcept;
  /// Allocations per step `stage` ran in (0 when it never ran).
  double allocs_per_step(StageId stage, MemorySide side) const noexcept;
  /// allocs_per_step() by name.
  double allocs_per_step(std::string_view stage, MemorySide side) const noexcept;
  /// Bytes allocated per step `stage` ran in (0 when it never ran).
  double bytes_per_step(StageId stage, MemorySide side) const noexcept;
  /// bytes_per_step() by name.
  double bytes_per_step(std::string_view stage, MemorySide side) const noexcept;
  /// The last completed step's counts.
  const AllocCounts& last_step(MemorySide side) const noexcept {
    return side == MemorySide::kDevice ? last_[0] : last_[1];
  }
  /// Completed steps after the warm-up that allocated on the device, and the first of them.
  std::uint64_t steady_allocating_steps() const noexcept { return steady_steps_; }
  /// The first of those steps (all zero and "" when there was none).
  const SteadyAllocation& first_steady_allocation() const noexcept { return first_steady_; }
  /// Device bytes in use at the last step end; -1 when the device source does not know.
  std::int64_t device_in_use_bytes() const noexcept { return in_use_; }
  /// The most device bytes in use seen (at step ends, or the source's own peak when it keeps
  /// one); -1 when the device source does not know.
  std::int64_t device_peak_bytes() const noexcept;
  /// The options the tracker was made with.
  const MemoryOptions& options() const noexcept { return options_; }
  /// Whether a source is attached for `side`.
  bool counts(MemorySide side) const noexcept {
    return sources_[side == MemorySide::kDevice ? 0 : 1] != nullptr;
  }

  // StepListener
  void on_step_begin(std::uint64_t step, std::int64_t ticks) override;
  void on_stage_begin(StageId id, std::int64_t ticks) override;
  void on_stage_end(StageId id, std::int64_t ticks) override;
  void on_step_end(std::uint64_t step, std::int64_t ticks, StepOutcome outcome) override;
  bool wants_worker_zones() const noexcept override { return false; }
  // TraceSource: a counter sample per step end while a window runs.
  void bind(const TimeBase& time_base) override { time_base_ = time_base; }
  void start() override;
  void discard() override { samples_.clear(); }
  void stop() override;
  std::uint64_t stop_and_collect(std::vector<Span>& out) override;

 private:
  struct Sample {
    std::int64_t ticks;
    std::int64_t in_use;
    std::uint64_t allocs;
  };
  struct Both {
    AllocCounts side[2];
  };
  Both read() const noexcept;
  void sample(std::uint64_t step, std::int64_t ticks, std::uint64_t allocs) noexcept;
  void grow(StageId id);
  void warn(const SteadyAllocation& a) const noexcept;

  StepProfiler& prof_;
  const AllocSource* sources_[2];
  MemoryOptions options_;
  TimeBase time_base_;
  Both step_begin_{};
  std::vector<Both> begin_, step_delta_, totals_;  // per stage
  std::vector<std::uint64_t> ran_in_, steps_;      // per stage: the step it last ran in, and count
  std::uint64_t step_ = 0, completed_ = 0, steady_steps_ = 0;
  StageId offender_ = kNoStage;  // innermost stage of this step that allocated on the device
  AllocCounts last_[2];
  SteadyAllocation first_steady_;
  std::int64_t in_use_ = -1, peak_ = -1;
  bool recording_ = false;
  std::vector<Sample> samples_;  // reserved at start(): no allocation per step
  std::uint64_t dropped_ = 0;
  std::uint64_t sampled_ = 0;    // the step last sampled (or dropped), + 1
  ListenerAttachment attached_;  // last: the first to go, so no call reaches a half-gone listener
};

/// stage_table() with the tracker's columns: device allocations and KiB per step, host allocations
/// and KiB per step (each side's columns when its source is attached).
std::string stage_table(const StepProfiler& prof, const MemoryTracker& memory);

}  // namespace simprof
