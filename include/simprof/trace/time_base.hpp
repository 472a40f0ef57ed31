// SPDX-License-Identifier: MIT
// TimeBase: the one timebase of a trace. A TraceSession builds it from its profiler's clock and
// hands it to every source it gathers (TraceSource::bind), so CPU stages, CUDA launches and kernels
// are all nanoseconds of the same counter and line up without synchronising. A value type: copies
// convert identically, and nothing about it is global or mutable.
//
/* clang-format off */
//   simprof::TimeBase tb(prof.clock());
//   std::int64_t ns = tb.to_ns(prof.clock().now());   // == tb.now_ns(), give or take the read
/* clang-format on */
#pragma once

#include <cmath>
#include <cstdint>

#include "simprof/base/clock.hpp"

namespace simprof {

class TimeBase {
 public:
  explicit TimeBase(Clock clock = Clock::steady()) noexcept
      : clock_(clock), ns_per_tick_(1e9 / clock.ticks_per_second()) {}

  /// Nanoseconds of this timebase for `ticks` of its clock (rounded to nearest).
  std::int64_t to_ns(std::int64_t ticks) const noexcept {
    return static_cast<std::int64_t>(std::llround(static_cast<double>(ticks) * ns_per_tick_));
  }
  /// Now, in nanoseconds of this timebase.
  std::int64_t now_ns() const noexcept { return to_ns(clock_.now()); }
  const Clock& clock() const noexcept { return clock_; }

 private:
  Clock clock_;
  double ns_per_tick_;
};

}  // namespace simprof
