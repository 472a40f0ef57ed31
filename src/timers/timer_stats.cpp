// SPDX-License-Identifier: MIT
#include "simprof/timers/timer_stats.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "simprof/base/stats.hpp"

namespace simprof {

TimerStats::TimerStats(TimerLabels labels, int n_envs)
    : TimerStats(std::move(labels), n_envs, -1.0) {}

TimerStats::TimerStats(TimerLabels labels, int n_envs, double ema_alpha)
    : labels_(std::move(labels)), n_envs_(n_envs), alpha_(ema_alpha) {
  if (n_envs < 1)
    throw std::invalid_argument(
        fmt::format("simprof: TimerStats n_envs = {} (expected >= 1)", n_envs));
  if (ema_alpha >= 0 && !(ema_alpha <= 1.0))
    throw std::invalid_argument(
        fmt::format("simprof: TimerStats alpha = {} (expected a value in [0, 1])", ema_alpha));
  const auto n = static_cast<std::size_t>(labels_.rows()) * static_cast<std::size_t>(n_envs);
  last_.assign(n, 0.0);
  mean_.assign(n, 0.0);
}

void TimerStats::update(const TimerFrame& f) {
  if (f.rows != rows() || f.n_envs != n_envs_)
    throw std::invalid_argument(
        fmt::format("simprof: timer frame of shape ({}, {}) (expected ({}, {}))", f.rows, f.n_envs,
                    rows(), n_envs_));
  const double k = 1.0 / f.ticks_per_second;
  const double w = alpha_ >= 0 ? (frames_ == 0 ? 0.0 : alpha_)
                               : static_cast<double>(frames_) / static_cast<double>(frames_ + 1);
  for (std::size_t i = 0; i < last_.size(); ++i) {
    const double s = static_cast<double>(f.data[i]) * k;
    last_[i] = s;
    mean_[i] = w * mean_[i] + (1.0 - w) * s;
  }
  ++frames_;
}

void TimerStats::reset() noexcept {
  std::fill(last_.begin(), last_.end(), 0.0);
  std::fill(mean_.begin(), mean_.end(), 0.0);
  frames_ = 0;
}

void TimerStats::check_row(int row) const { (void)labels_.name(row); }

namespace {
std::vector<double> row_of(const std::vector<double>& v, int row, int n) {
  const auto b = v.begin() + static_cast<std::ptrdiff_t>(row) * n;
  return std::vector<double>(b, b + n);
}
}  // namespace

std::vector<double> TimerStats::last(int row) const {
  check_row(row);
  return row_of(last_, row, n_envs_);
}
std::vector<double> TimerStats::mean(int row) const {
  check_row(row);
  return row_of(mean_, row, n_envs_);
}
std::vector<double> TimerStats::sorted_mean(int row) const {
  auto v = mean(row);
  std::sort(v.begin(), v.end());
  return v;
}

AcrossEnvs TimerStats::across_envs(int row, bool latest) const {
  const LatencyStats s = summarize(latest ? last(row) : mean(row));
  return AcrossEnvs{s.min, s.p50, s.p95, s.p99, s.max, s.mean};
}

std::vector<int> TimerStats::slowest(int row, int k) const {
  check_row(row);
  if (k < 0) throw std::invalid_argument(fmt::format("simprof: slowest k = {} (expected >= 0)", k));
  const auto m = row_of(mean_, row, n_envs_);
  std::vector<int> idx(static_cast<std::size_t>(n_envs_));
  std::iota(idx.begin(), idx.end(), 0);
  const auto kk = std::min<std::size_t>(static_cast<std::size_t>(k), idx.size());
  std::partial_sort(
      idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(kk), idx.end(), [&](int a, int b) {
        return m[static_cast<std::size_t>(a)] > m[static_cast<std::size_t>(b)] ||
               (m[static_cast<std::size_t>(a)] == m[static_cast<std::size_t>(b)] && a < b);
      });
  idx.resize(kk);
  return idx;
}

}  // namespace simprof
