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
  double min = 0, p50 = 0, p95 = 0, p99 = 0, max = 0, mean = 0;
};

/// Statistics of a timer buffer over steps: the latest frame, and a running mean per env (the mean
/// of every frame since reset(), or an EMA when constructed with alpha).
class TimerStats {
 public:
  explicit TimerStats(TimerLabels labels, int n_envs);
  TimerStats(TimerLabels labels, int n_envs, double ema_alpha);

  /// Adds a frame (same shape; std::invalid_argument otherwise). Allocates nothing.
  void update(const TimerFrame& frame);
  void reset() noexcept;

  std::uint64_t frames() const noexcept { return frames_; }
  int rows() const noexcept { return labels_.rows(); }
  int n_envs() const noexcept { return n_envs_; }
  const TimerLabels& labels() const noexcept { return labels_; }
  /// Seconds per env in env order: the latest frame, and the running mean.
  std::vector<double> last(int row) const;
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
