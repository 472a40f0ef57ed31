// SPDX-License-Identifier: MIT
// A trace schedule with torch.profiler.schedule's semantics, advanced once per step.
//
/* clang-format off */
//   simprof::Schedule s{/*wait=*/80, /*warmup=*/3, /*active=*/1, /*repeat=*/1};
//   s.action(/*step=*/83);   // kNone, kWarmup, kRecord, kRecordAndSave: here kRecordAndSave
/* clang-format on */
//
// After skip_first steps, cycles of wait + warmup + active steps repeat `repeat` times (0:
// forever). During warm-up the tracer runs but its results are discarded; the last active step of a
// cycle records and saves (the "on trace ready" moment).
#pragma once

#include <cstdint>
#include <string_view>

namespace simprof {

/// What a trace session does at a step: nothing, warm up, record, or record and save the window.
enum class ScheduleAction { kNone, kWarmup, kRecord, kRecordAndSave };
/// The enumerator's name without the k ("none", "warmup", "record", "record_and_save").
std::string_view to_string(ScheduleAction a) noexcept;

/// A torch.profiler-style schedule: wait, warm up, record, repeat.
struct Schedule {
  /// Steps skipped at the start of each cycle.
  std::int64_t wait = 0;
  /// Steps the tracer runs, results discarded, before recording.
  std::int64_t warmup = 0;
  /// Steps recorded per cycle (>= 1); the last one saves the window.
  std::int64_t active = 1;
  /// Cycles; 0 repeats forever.
  std::int64_t repeat = 1;
  /// Steps skipped once, before the first cycle.
  std::int64_t skip_first = 0;

  /// Throws std::invalid_argument naming the field: negative counts, active < 1.
  void validate() const;
  /// The action for step `step` (0-based), exactly torch.profiler.schedule's.
  ScheduleAction action(std::int64_t step) const noexcept;
};

}  // namespace simprof
