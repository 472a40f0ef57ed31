// SPDX-License-Identifier: MIT
// RunningMean: smooths a value read every step, like Genesis's genesis.utils.tools.RunningMean.
//
/* clang-format off */
//   simprof::RunningMean physics_time(100);   // mean of the latest 100 values, NaN until 100 arrived
//   physics_time.update(prof.timings().at("physics"));
//   double physics_fps = 1.0 / physics_time.value();
/* clang-format on */
//
// Window mode keeps a ring of N values and a compensated running sum, so an update is O(1),
// allocates nothing after construction and does not drift over millions of updates. EMA mode keeps
// ema = alpha * ema + (1 - alpha) * x, seeded with the first value (alpha is the momentum, as in
// ProfilingOptions::fps_tracker_alpha).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "simprof/detail/ring.hpp"

namespace simprof {

/// The mean of the latest N values (window mode) or an exponential moving average (EMA mode).
class RunningMean {
 public:
  /// Window mode over the latest `window` values; throws std::invalid_argument if window == 0.
  explicit RunningMean(std::size_t window);
  /// EMA mode; throws std::invalid_argument unless 0 <= alpha <= 1 and finite.
  static RunningMean ema(double alpha);

  /// Adds a value; throws std::invalid_argument for NaN or infinity (one would poison the mean).
  void update(double x);
  /// The window mean (NaN until `window` values arrived) or the EMA (NaN before the first value).
  double value() const noexcept;
  /// Mean of the values held so far, even before the window is full (NaN when empty).
  double partial_value() const noexcept;
  /// Values received since construction or the last reset().
  std::uint64_t count() const noexcept { return count_; }
  /// True in EMA mode (made by ema()).
  bool is_ema() const noexcept { return window_ == 0; }
  /// The window length; 0 in EMA mode.
  std::size_t window() const noexcept { return window_; }
  /// The EMA's momentum (EMA mode only).
  double alpha() const noexcept { return alpha_; }
  /// Forgets every value: value() is NaN again and count() 0.
  void reset() noexcept;

 private:
  RunningMean() = default;
  void add_to_sum(double x) noexcept;

  std::size_t window_ = 0;  // 0: EMA mode
  double alpha_ = 0.0;
  detail::Ring<double> ring_;
  double sum_ = 0.0;
  double compensation_ = 0.0;  // Neumaier compensation of sum_
  double ema_ = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t count_ = 0;
};

}  // namespace simprof
