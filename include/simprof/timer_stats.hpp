// SPDX-License-Identifier: MIT
// Host side of per-env timers: a CPU buffer with the same (rows, n_envs) layout as the device one,
// a read-only frame of readings, and statistics across envs.
//
//   simprof::TimerBuffer timers({"forces", "contacts", "integrate"}, n_envs);   // CPU backend
//   engine.step(timers.view());                       // the engine's loops call TimerChain::lap
//   stats.update(timers.frame());                     // last values, running mean per env
//   stats.across_envs(1).p99;  stats.slowest(1, 5);   // the slow tail, and which envs are in it
//   std::fputs(simprof::terminal_plot(stats, 1).c_str(), stdout);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "simprof/timers.hpp"

namespace simprof {

/// What the ticks in a buffer count.
enum class TimerUnit { kCycles, kNanoseconds };

/// Row labels: names in row order (an enum's order). Looking up an unknown name, or a row out of
/// range, throws std::invalid_argument / std::out_of_range naming it.
class TimerLabels {
 public:
  explicit TimerLabels(std::vector<std::string> names);
  int rows() const noexcept { return static_cast<int>(names_.size()); }
  const std::string& name(int row) const;
  int row(std::string_view name) const;
  const std::vector<std::string>& names() const noexcept { return names_; }

 private:
  std::vector<std::string> names_;
};

/// A read-only (rows, n_envs) frame of ticks with what converts them to seconds.
struct TimerFrame {
  const TimerLabels* labels = nullptr;
  const std::uint64_t* data = nullptr;
  int rows = 0;
  int n_envs = 0;
  TimerUnit unit = TimerUnit::kCycles;
  double ticks_per_second = 1e9;  ///< for cycles: the clock frequency used to convert (approximate)

  std::uint64_t ticks(int row, int env) const;  ///< range-checked
  double seconds(int row, int env) const {
    return static_cast<double>(ticks(row, env)) / ticks_per_second;
  }
};

/// The CPU backend's buffer: same layout and API as cuda::DeviceTimerBuffer, with the TSC (or the
/// steady clock) as counter and its calibrated frequency.
class TimerBuffer {
 public:
  /// Throws std::invalid_argument for no labels or n_envs < 1.
  TimerBuffer(std::vector<std::string> labels, int n_envs, TimerUnit unit = TimerUnit::kCycles);
  TimerView view() noexcept { return TimerView{data_.data(), labels_.rows(), n_envs_}; }
  void reset() noexcept;
  TimerFrame frame() const noexcept;
  const TimerLabels& labels() const noexcept { return labels_; }
  int rows() const noexcept { return labels_.rows(); }
  int n_envs() const noexcept { return n_envs_; }
  /// Ticks per second of clock_counter() on this host (the calibrated TSC) or 1e9.
  double clock_freq_hz() const noexcept { return ticks_per_second_; }

 private:
  TimerLabels labels_;
  int n_envs_;
  TimerUnit unit_;
  double ticks_per_second_;
  std::vector<std::uint64_t> data_;
};

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

struct PlotOptions {
  int width = 0;        ///< characters; 0: the terminal's width (COLUMNS, the tty, else 120)
  int height = 8;       ///< rows of each panel
  bool unicode = true;  ///< block characters; false: '#' for terminals without UTF-8
};

/// Three panels for one timer row, like Genesis's timers example: the latest step per env, the mean
/// per env in env order, and the means sorted. Envs are binned to the width (max of each bin).
std::string terminal_plot(const TimerStats& stats, int row, const PlotOptions& options = {});

/// The same three panels for every row, as a self-contained SVG document.
std::string timers_svg(const TimerStats& stats, const std::string& title = "simprof timers");

/// Writes text to `path` atomically (a temporary file, then rename). Throws std::runtime_error
/// naming the path and the reason.
void write_file_atomic(const std::string& path, std::string_view text);

}  // namespace simprof
