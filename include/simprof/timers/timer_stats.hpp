// SPDX-License-Identifier: MIT
// Statistics of per-env timers over steps: the latest frame, a running mean per env, percentiles
// across envs and the slowest envs.
//
/* clang-format off */
//   simprof::TimerStats stats(simprof::TimerLabels({"solve", "contacts"}), n_envs);
//   stats.update(timers.read());                     // last values, running mean per env
//   stats.across_envs(1).p99;  stats.slowest(1, 5);   // the slow tail, and which envs are in it
/* clang-format on */
#pragma once

#include <cstdint>
#include <vector>

#include "simprof/timers/timer_buffer.hpp"

namespace simprof {

/// Percentiles of one row across envs, in seconds.
struct AcrossEnvs {
  ///@{
  /// The fastest env, the median, the 95th and 99th percentiles, the slowest env, and the mean.
  double min = 0, p50 = 0, p95 = 0, p99 = 0, max = 0, mean = 0;
  ///@}
};

/// Statistics of a timer buffer over steps: the latest frame, and a running mean per env (the mean
/// of every frame since reset(), or an EMA when constructed with alpha).
class TimerStats {
 public:
  /// For frames of `labels` rows and `n_envs` envs; the running mean is that of every frame.
  explicit TimerStats(TimerLabels labels, int n_envs);
  /// The same, with the running mean an EMA of momentum `ema_alpha` in [0, 1] (the old mean's
  /// weight).
  TimerStats(TimerLabels labels, int n_envs, double ema_alpha);

  /// Adds a frame (same shape; std::invalid_argument otherwise). Allocates nothing.
  void update(const TimerFrame& frame);
  /// Forgets every frame added.
  void reset() noexcept;

  /// Frames added since construction or reset().
  std::uint64_t frames() const noexcept { return frames_; }
  /// Rows (timers).
  int rows() const noexcept { return labels_.rows(); }
  /// Environments per frame.
  int n_envs() const noexcept { return n_envs_; }
  /// The rows' labels.
  const TimerLabels& labels() const noexcept { return labels_; }
  /// Seconds per env in env order: the latest frame.
  std::vector<double> last(int row) const;
  /// Seconds per env in env order: the running mean.
  std::vector<double> mean(int row) const;
  /// The running means, ascending.
  std::vector<double> sorted_mean(int row) const;
  /// Percentiles across envs of the running means (or of the latest frame).
  AcrossEnvs across_envs(int row, bool latest = false) const;
  /// The k envs with the largest running mean, slowest first.
  std::vector<int> slowest(int row, int k) const;

 private:
  void check_row(int row) const;
  TimerLabels labels_;
  int n_envs_;
  double alpha_;  // < 0: cumulative mean
  std::vector<double> last_, mean_;
  std::uint64_t frames_ = 0;
};

}  // namespace simprof
