// SPDX-License-Identifier: MIT
// Host side of per-env timers: row labels, a read-only frame of readings, and the CPU backend's
// (rows, n_envs) buffer with the same layout as cuda::DeviceTimerBuffer.
//
/* clang-format off */
//   simprof::TimerBuffer timers({"forces", "contacts", "integrate"}, n_envs);   // CPU backend
//   engine.step(timers.view());                       // the engine's loops call TimerChain::lap
//   stats.update(timers.read());                     // see timer_stats.hpp
/* clang-format on */
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "simprof/timers/timer_view.hpp"

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

/// The CPU backend's buffer: the layout and the names of cuda::DeviceTimerBuffer (view, reset,
/// read, labels, rows, n_envs, unit, ticks_per_second), with the TSC (or the steady clock) as
/// counter and its calibrated frequency. Its readings are in host memory already, so read() needs
/// no stream and there is nothing asynchronous to wait for (the device buffer's latest()).
class TimerBuffer {
 public:
  /// Throws std::invalid_argument for no labels or n_envs < 1.
  TimerBuffer(std::vector<std::string> labels, int n_envs, TimerUnit unit = TimerUnit::kCycles);
  TimerView view() noexcept { return TimerView{data_.data(), labels_.rows(), n_envs_}; }
  void reset() noexcept;
  /// The readings as they are now.
  TimerFrame read() const noexcept;
  const TimerLabels& labels() const noexcept { return labels_; }
  int rows() const noexcept { return labels_.rows(); }
  int n_envs() const noexcept { return n_envs_; }
  TimerUnit unit() const noexcept { return unit_; }
  /// Ticks per second used for conversion: clock_counter()'s on this host (the calibrated TSC, or
  /// 1e9 where it falls back to the steady clock) for cycles, 1e9 for nanoseconds.
  double ticks_per_second() const noexcept { return ticks_per_second_; }

 private:
  TimerLabels labels_;
  int n_envs_;
  TimerUnit unit_;
  double ticks_per_second_;
  std::vector<std::uint64_t> data_;
};

}  // namespace simprof
