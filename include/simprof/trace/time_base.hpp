// SPDX-License-Identifier: MIT
// TimeBase: the one timebase of a trace. A TraceSession builds it from its profiler's clock and
// hands it to every source it gathers (TraceSource::bind), so CPU stages, CUDA launches and kernels
// are all nanoseconds of the same counter and line up without synchronising. A value type: copies
// convert identically, and nothing about it is global or mutable.
//
// Its nanoseconds count from the clock's zero. wall_offset_ns() maps them onto the wall clock at
// one instant (a session takes it at every window's start and the writer adds it), so the traces of
// several processes, one per GPU, line up, and a TSC clock calibrated separately in each process
// cannot drift them apart over a run. Sources (CUPTI's timestamp callback) keep the clock's small
// numbers.
//
/* clang-format off */
//   simprof::TimeBase tb(prof.clock());
//   std::int64_t ns = tb.to_ns(prof.clock().now());   // == tb.now_ns(), give or take the read
/* clang-format on */
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>

#include "simprof/base/clock.hpp"

namespace simprof {

/// A trace's one timebase: a clock's ticks as nanoseconds from the clock's zero, shared by every
/// source of the trace.
class TimeBase {
 public:
  /// The timebase of `clock`.
  explicit TimeBase(Clock clock = Clock::steady()) noexcept
      : clock_(clock), ns_per_tick_(1e9 / clock.ticks_per_second()) {}

  /// Nanoseconds of this timebase for `ticks` of its clock (rounded to nearest).
  std::int64_t to_ns(std::int64_t ticks) const noexcept {
    return static_cast<std::int64_t>(std::llround(static_cast<double>(ticks) * ns_per_tick_));
  }
  /// What to add to this timebase's nanoseconds, now, for wall-clock time (nanoseconds since the
  /// Unix epoch): the clock read on both sides of the system clock, midpoint taken.
  std::int64_t wall_offset_ns() const noexcept {
    const std::int64_t t0 = now_ns();
    const auto wall = std::chrono::system_clock::now().time_since_epoch();
    const std::int64_t t1 = now_ns();
    return std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count() -
           (t0 + (t1 - t0) / 2);
  }
  /// Now, in nanoseconds of this timebase.
  std::int64_t now_ns() const noexcept { return to_ns(clock_.now()); }
  /// The clock whose ticks this converts.
  const Clock& clock() const noexcept { return clock_; }

 private:
  Clock clock_;
  double ns_per_tick_;
};

}  // namespace simprof
