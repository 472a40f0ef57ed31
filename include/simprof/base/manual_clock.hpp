// SPDX-License-Identifier: MIT
// ManualClock: a clock that only moves when told to, for deterministic tests of timing logic.
//
/* clang-format off */
//   simprof::ManualClock mc;
//   simprof::StepProfiler prof(options, 0, mc.clock());
//   mc.advance(0.010);  // 10 ms pass
/* clang-format on */
#pragma once

#include <cmath>
#include <cstdint>

#include "simprof/base/clock.hpp"

namespace simprof {

/// A clock that only moves when told to: timing logic tested deterministically (nanosecond ticks).
class ManualClock {
 public:
  /// A Clock that reads this object; the ManualClock must outlive every user of it.
  Clock clock() const { return Clock::custom(&read, this, 1e9); }
  /// The time it reads now, in nanoseconds.
  std::int64_t now_ns() const noexcept { return now_ns_; }
  /// Sets the time to `ns` nanoseconds.
  void set_ns(std::int64_t ns) noexcept { now_ns_ = ns; }
  /// Moves the time on by `ns` nanoseconds.
  void advance_ns(std::int64_t ns) noexcept { now_ns_ += ns; }
  /// Moves the time on by `seconds`, rounded to the nearest nanosecond.
  void advance(double seconds) noexcept { now_ns_ += std::llround(seconds * 1e9); }

 private:
  static std::int64_t read(const void* self) noexcept {
    return static_cast<const ManualClock*>(self)->now_ns_;
  }
  std::int64_t now_ns_ = 0;
};

}  // namespace simprof
