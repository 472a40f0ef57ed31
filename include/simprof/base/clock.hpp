// SPDX-License-Identifier: MIT
// Clock: the one source of timestamps for a profiler. Timestamps are raw ticks (nanoseconds for the
// steady clock, cycles for the TSC); they are converted to seconds only off the hot path, when a
// step is published, so a stage scope costs two counter reads and a few adds (the Tracy habit).
//
/* clang-format off */
//   simprof::Clock clock = simprof::Clock::steady();
//   auto t0 = clock.now();  /* work */  double s = clock.seconds(clock.now() - t0);
/* clang-format on */
//
// Tests inject a ManualClock (see manual_clock.hpp) and never depend on wall time.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "simprof/base/config.hpp"

#if defined(__x86_64__) || defined(_M_X64)
#define SIMPROF_HAS_TSC 1
#if defined(_MSC_VER)
#include <intrin.h>
#else
#include <x86intrin.h>
#endif
#else
#define SIMPROF_HAS_TSC 0
#endif

namespace simprof {

/// Which counter a profiler reads. kAuto picks the TSC where it is invariant (constant rate, does
/// not stop in idle states), else the steady clock.
enum class ClockSource { kAuto, kSteady, kTsc };

/// The enumerator's name without the k ("auto", "steady", "tsc").
std::string_view to_string(ClockSource source) noexcept;

namespace detail {
SIMPROF_FORCE_INLINE std::int64_t steady_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
SIMPROF_FORCE_INLINE std::int64_t tsc_now() noexcept {
#if SIMPROF_HAS_TSC
  return static_cast<std::int64_t>(__rdtsc());
#else
  return steady_now_ns();
#endif
}
}  // namespace detail

/// True when this CPU has an invariant TSC that simprof can use as a clock.
bool tsc_available() noexcept;

/// TSC ticks per second, calibrated once per process against the steady clock (about 10 ms, on
/// first use). Throws std::runtime_error where no invariant TSC exists.
double tsc_frequency_hz();

/// A copyable handle on a counter: a kind tag plus, for custom clocks, a function pointer.
/// Reading it is a switch on the tag and an inlined counter read; no virtual call.
class Clock {
 public:
  /// A custom clock's counter read: ticks now, given the context passed to custom().
  using NowFn = std::int64_t (*)(const void* context) noexcept;

  /// std::chrono::steady_clock, in nanoseconds.
  static Clock steady() noexcept { return Clock(Kind::kSteady, nullptr, nullptr, 1e9); }
  /// The TSC; throws std::runtime_error naming the reason where it is not usable.
  static Clock tsc();
  /// Resolves kAuto; kTsc throws where the TSC is not usable.
  static Clock from_source(ClockSource source);
  /// Any counter: `now(context)` returns ticks, `ticks_per_second` converts them.
  /// Throws std::invalid_argument for a null function or a non-positive, non-finite rate.
  static Clock custom(NowFn now, const void* context, double ticks_per_second);

  /// The counter now, in ticks of this clock.
  SIMPROF_FORCE_INLINE std::int64_t now() const noexcept {
    switch (kind_) {
      case Kind::kTsc:
        return detail::tsc_now();
      case Kind::kSteady:
        return detail::steady_now_ns();
      default:
        return fn_(ctx_);
    }
  }

  /// This clock's rate: ticks in one second.
  double ticks_per_second() const noexcept { return ticks_per_second_; }
  /// `ticks` of this clock in seconds.
  double seconds(std::int64_t ticks) const noexcept {
    return static_cast<double>(ticks) * seconds_per_tick_;
  }
  /// Ticks in `s` seconds, rounded to nearest.
  std::int64_t ticks(double s) const noexcept;
  /// The counter this clock reads (kSteady or kTsc; custom clocks report kSteady).
  ClockSource source() const noexcept;

 private:
  enum class Kind : std::uint8_t { kSteady, kTsc, kCustom };
  Clock(Kind kind, NowFn fn, const void* ctx, double tps) noexcept
      : kind_(kind), fn_(fn), ctx_(ctx), ticks_per_second_(tps), seconds_per_tick_(1.0 / tps) {}

  Kind kind_;
  NowFn fn_;
  const void* ctx_;
  double ticks_per_second_;
  double seconds_per_tick_;
};

}  // namespace simprof
