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

/// What a (rows, n_envs) buffer of timer ticks is, wherever it lives: its row labels, its envs and
/// what its ticks count. The host TimerBuffer and cuda::DeviceTimerBuffer are built on it, so both
/// answer these questions the same way.
class TimerLayout {
 public:
  const TimerLabels& labels() const noexcept { return labels_; }
  int rows() const noexcept { return labels_.rows(); }
  int n_envs() const noexcept { return n_envs_; }
  TimerUnit unit() const noexcept { return unit_; }
  /// Ticks per second used for conversion: 1e9 for nanoseconds; for cycles the counter's frequency
  /// (the host's calibrated TSC, the device's nominal SM clock).
  double ticks_per_second() const noexcept { return ticks_per_second_; }
  /// rows x n_envs.
  std::size_t elements() const noexcept {
    return static_cast<std::size_t>(rows()) * static_cast<std::size_t>(n_envs_);
  }

 protected:
  /// Throws std::invalid_argument naming `owner` for no labels or n_envs < 1.
  TimerLayout(const char* owner, std::vector<std::string> labels, int n_envs, TimerUnit unit);
  /// For cycles: the counter's frequency, once known.
  void set_cycles_per_second(double hz) noexcept {
    if (unit_ == TimerUnit::kCycles) ticks_per_second_ = hz;
  }
  TimerView view_of(std::uint64_t* data) const noexcept {
    return TimerView{data, labels_.rows(), n_envs_};
  }
  TimerFrame frame_of(const std::uint64_t* data) const noexcept {
    return TimerFrame{&labels_, data, labels_.rows(), n_envs_, unit_, ticks_per_second_};
  }

 private:
  TimerLabels labels_;
  int n_envs_;
  TimerUnit unit_;
  double ticks_per_second_ = 1e9;
};

/// The CPU backend's buffer, with the device buffer's names (view, reset, read, and TimerLayout's)
/// and the TSC (or the steady clock) as counter. Its readings are in host memory already, so read()
/// needs no stream and there is nothing asynchronous to wait for (the device buffer's latest()).
class TimerBuffer : public TimerLayout {
 public:
  /// Throws std::invalid_argument for no labels or n_envs < 1.
  TimerBuffer(std::vector<std::string> labels, int n_envs, TimerUnit unit = TimerUnit::kCycles);
  TimerView view() noexcept { return view_of(data_.data()); }
  void reset() noexcept;
  /// The readings as they are now.
  TimerFrame read() const noexcept { return frame_of(data_.data()); }

 private:
  std::vector<std::uint64_t> data_;
};

}  // namespace simprof
