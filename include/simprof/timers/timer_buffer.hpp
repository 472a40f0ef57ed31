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
  /// `names[i]` labels row i.
  explicit TimerLabels(std::vector<std::string> names);
  /// How many rows (labels) there are.
  int rows() const noexcept { return static_cast<int>(names_.size()); }
  /// The label of `row`.
  const std::string& name(int row) const;
  /// The row labelled `name`.
  int row(std::string_view name) const;
  /// Every label, in row order.
  const std::vector<std::string>& names() const noexcept { return names_; }

 private:
  std::vector<std::string> names_;
};

/// A read-only (rows, n_envs) frame of ticks with what converts them to seconds.
struct TimerFrame {
  /// The rows' labels (the buffer's; not owned).
  const TimerLabels* labels = nullptr;
  /// rows x n_envs ticks, row-major: row r, env e at r * n_envs + e (not owned).
  const std::uint64_t* data = nullptr;
  /// Rows (timers) in the frame.
  int rows = 0;
  /// Environments (columns) in the frame.
  int n_envs = 0;
  /// What the ticks count.
  TimerUnit unit = TimerUnit::kCycles;
  double ticks_per_second = 1e9;  ///< for cycles: the clock frequency used to convert (approximate)

  std::uint64_t ticks(int row, int env) const;  ///< range-checked
  /// ticks(row, env) converted to seconds.
  double seconds(int row, int env) const {
    return static_cast<double>(ticks(row, env)) / ticks_per_second;
  }
};

/// What a (rows, n_envs) buffer of timer ticks is, wherever it lives: its row labels, its envs and
/// what its ticks count. The host TimerBuffer and cuda::DeviceTimerBuffer are built on it, so both
/// answer these questions the same way.
class TimerLayout {
 public:
  /// The rows' labels.
  const TimerLabels& labels() const noexcept { return labels_; }
  /// Rows (timers): one per label.
  int rows() const noexcept { return labels_.rows(); }
  /// Environments (columns).
  int n_envs() const noexcept { return n_envs_; }
  /// What the ticks count.
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
  /// The writable view of a buffer of this layout at `data`.
  TimerView view_of(std::uint64_t* data) const noexcept {
    return TimerView{data, labels_.rows(), n_envs_};
  }
  /// The read-only frame of a buffer of this layout at `data`.
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
  /// The view the engine's loops stamp through.
  TimerView view() noexcept { return view_of(data_.data()); }
  /// Zeroes every reading.
  void reset() noexcept;
  /// The readings as they are now.
  TimerFrame read() const noexcept { return frame_of(data_.data()); }

 private:
  std::vector<std::uint64_t> data_;
};

}  // namespace simprof
