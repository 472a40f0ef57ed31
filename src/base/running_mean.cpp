// SPDX-License-Identifier: MIT
#include "simprof/base/running_mean.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace simprof {

RunningMean::RunningMean(std::size_t window) : window_(window) {
  if (window == 0)
    throw std::invalid_argument(
        "simprof: RunningMean window = 0 (expected >= 1; use RunningMean::ema(alpha) for an EMA)");
  ring_ = detail::Ring<double>(window);
}

RunningMean RunningMean::ema(double alpha) {
  if (!(std::isfinite(alpha) && alpha >= 0.0 && alpha <= 1.0))
    throw std::invalid_argument(fmt::format(
        "simprof: RunningMean::ema alpha = {} (expected a finite value in [0, 1])", alpha));
  RunningMean m;
  m.alpha_ = alpha;
  return m;
}

void RunningMean::add_to_sum(double x) noexcept {
  // Neumaier's compensated sum: the error of each addition is carried, so adding and removing
  // millions of values leaves no drift.
  const double t = sum_ + x;
  if (std::fabs(sum_) >= std::fabs(x))
    compensation_ += (sum_ - t) + x;
  else
    compensation_ += (x - t) + sum_;
  sum_ = t;
}

void RunningMean::update(double x) {
  if (!std::isfinite(x))
    throw std::invalid_argument(
        fmt::format("simprof: RunningMean::update value = {} (expected a finite number)", x));
  if (window_ == 0) {
    ema_ = count_ == 0 ? x : alpha_ * ema_ + (1.0 - alpha_) * x;
  } else {
    if (ring_.full()) add_to_sum(-ring_.oldest());
    ring_.push(x);
    add_to_sum(x);
  }
  ++count_;
}

double RunningMean::value() const noexcept {
  if (window_ == 0) return ema_;
  if (count_ < window_) return std::numeric_limits<double>::quiet_NaN();
  return (sum_ + compensation_) / static_cast<double>(window_);
}

double RunningMean::partial_value() const noexcept {
  if (window_ == 0) return ema_;
  if (count_ == 0) return std::numeric_limits<double>::quiet_NaN();
  const auto n = count_ < window_ ? count_ : window_;
  return (sum_ + compensation_) / static_cast<double>(n);
}

void RunningMean::reset() noexcept {
  ring_.clear();
  sum_ = 0.0;
  compensation_ = 0.0;
  ema_ = std::numeric_limits<double>::quiet_NaN();
  count_ = 0;
}

}  // namespace simprof
