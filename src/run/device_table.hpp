// SPDX-License-Identifier: MIT
// The device clock's figures of `simprof run --gpu`: from each sampled window's trace (analyze()),
// per stage the device span of the kernels launched inside it, the step's device span, the period
// between the device ends of consecutive sampled steps, and the steps run per device second between
// windows (the FPS line). The last 65,536 samples of each are kept. Private to src/run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "simprof/cuda/trace/launch_scopes.hpp"  // LaunchWindow: plain structs, no CUDA header
#include "simprof/profiler/report.hpp"
#include "simprof/trace/analysis.hpp"

namespace simprof::run {

/// How `simprof run --gpu` samples: a window of 2 consecutive steps in every `every`, and at most
/// one window in `interval_ms` (each window costs the program's host time, through CUPTI a
/// subscription: the interval bounds that cost where steps are short), and how it sees launches.
struct Sampling {
  std::int64_t every = 64;
  std::int64_t interval_ms = 100;
  // --gpu-launches: how the launches are seen (kAuto: the preloaded launch hook, else CUPTI).
  cuda::LaunchSource launches = cuda::LaunchSource::kAuto;
  // Why simprof run did not preload the hook under auto (SIMPROF_RUN_HOOK_UNUSED); empty: it did.
  std::string hook_unused{};
};

/// --gpu-launches and SIMPROF_RUN_GPU_LAUNCHES: "auto", "hook" or "cupti" (false for another).
bool parse_launches(const std::string& text, cuda::LaunchSource& out) noexcept;
/// The name parse_launches() reads.
const char* launches_name(cuda::LaunchSource source) noexcept;

/// Which steps open a window: steps every-2 (of each `every`), the interval after the last one.
class WindowSchedule {
 public:
  /// `ticks_per_second`: of the clock the steps' begin ticks come from.
  WindowSchedule(Sampling sampling, double ticks_per_second);
  /// Whether step `step`, beginning at `ticks`, opens a window; one that does is noted.
  bool opens(std::uint64_t step, std::int64_t ticks) noexcept;
  /// Whether a window's last step is `step` (every-1 of each `every`).
  bool closes(std::uint64_t step) const noexcept { return step % every_ == every_ - 1; }

 private:
  std::uint64_t every_;
  std::int64_t interval_;  // ticks
  bool opened_ = false;
  std::int64_t last_ = 0;
};

/// LaunchScopes's windows as analyze() gives a trace's steps: each depth-0 scope a step (numbered
/// from the window's tag), the others its stages (named by `name`; a stage run twice in a step
/// counts both runs, as on the host), every device time on one timebase across windows (from the
/// anchors' gaps; the first anchored window sits at an arbitrary positive origin).
class WindowSteps {
 public:
  using NameFn = std::function<std::string(std::int32_t id)>;
  TraceAnalysis operator()(const cuda::LaunchWindow& w, const NameFn& name);

 private:
  std::int64_t anchor_ = 0;  // the last anchored window's anchor, on the timebase handed on
};

class DeviceTable {
 public:
  explicit DeviceTable(std::size_t window = std::size_t{1} << 16);

  /// For the FPS line: the last sampled step's device end, and the steps since the one before
  /// (0 at the first window).
  struct Progress {
    std::int64_t end_ns = 0;
    std::uint64_t steps = 0;
  };
  /// Adds one window's steps (those that ran kernels); the FPS line's progress when one had any
  /// and its device end is past the last one's.
  std::optional<Progress> add(const TraceAnalysis& window);
  /// The table's rows in stage_table()'s order: each stage after its parent (by path), then "step"
  /// and "period"; empty before a sampled step ran a kernel.
  std::vector<StageRow> rows() const;
  /// Sampled steps that ran kernels, and those that ran none (left out).
  std::uint64_t sampled() const noexcept { return sampled_; }
  std::uint64_t without_kernels() const noexcept { return without_kernels_; }
  std::uint64_t windows() const noexcept { return windows_; }
  /// Steps per device second from the first progress to the last: the mean the FPS line's samples
  /// are drawn from (NaN before two).
  double steps_per_second() const noexcept;
  /// Forgets everything (the step range changed).
  void clear();

 private:
  void push(const std::string& name, double seconds);
  std::size_t window_;
  std::map<std::string, std::deque<double>> samples_;  // seconds, by stage path
  std::vector<std::string> order_;                     // stage paths, first seen first
  std::uint64_t sampled_ = 0, without_kernels_ = 0, windows_ = 0;
  std::optional<std::uint64_t> last_step_;  // the last progress's step, and its device end
  std::int64_t last_end_ = 0;
  std::uint64_t first_step_ = 0;  // the first progress's
  std::int64_t first_end_ = 0;
};

}  // namespace simprof::run
