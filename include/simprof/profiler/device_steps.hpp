// SPDX-License-Identifier: MIT
// DeviceSteps: what a GPU backend measured of each step, joined to the profiler's steps in order.
// It keeps the device's period only between consecutive completed steps (a step that left no
// device time, or a vetoed one, never widens it), and — when asked — feeds the profiler's FPS line
// with the device's step-end times, so the line says what the GPU did. The host side of
// cuda::StepPacer, testable without a GPU: feed it numbers.
//
/* clang-format off */
//   simprof::DeviceSteps steps(prof, /*feed_fps=*/true);   // prof.fps() now reads the GPU clock
//   steps.add(/*step=*/41, /*completed=*/true, /*step_s=*/104e-6, /*since_previous_end_s=*/104e-6);
//   steps.latest().period_s;                               // 104 us
/* clang-format on */
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "simprof/profiler/step_profiler.hpp"

namespace simprof {

/// One step as the device saw it.
struct DeviceStep {
  /// A time not measured (NaN).
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t step = 0;  ///< the profiler's step index
  bool completed = false;  ///< false: vetoed or aborted on the host, so not counted
  double step_s = kNone;   ///< device seconds from the step's start to its end
  /// Device seconds from the end of the step before to the end of this one; NaN unless the step
  /// before is step - 1 and it completed.
  double period_s = kNone;
  /// The step's end on the feed's running device clock (nanoseconds since the feed began or last
  /// lost track); what the FPS line is ticked with.
  std::int64_t end_ns = 0;
  /// The step whose timed end closed the period this step shares: the step itself when its own
  /// end was timed; a later one when the steps between two timed ends share their mean (a
  /// StepPacer with mark_every > 1).
  std::uint64_t group_end = 0;
};

/// The device times of a profiler's steps, added in step order by a device timer (the CUDA
/// backend's StepPacer), with their means; optionally the source of the profiler's FPS line.
class DeviceSteps {
 public:
  /// `feed_fps`: claim `prof`'s FPS line for the device clock and tick it here, until this object
  /// goes (FpsTracker::claim_device_clock: a second feed is refused, naming `who`).
  DeviceSteps(StepProfiler& prof, bool feed_fps, std::string who = "a StepPacer");
  DeviceSteps(const DeviceSteps&) = delete;
  DeviceSteps& operator=(const DeviceSteps&) = delete;

  /// Step `step` ended on the device. Steps come in increasing order; indices skipped since the
  /// last call are steps that left no device time (counted in missed()). `since_previous_end_s`:
  /// device seconds from the end of the previously added step (NaN when unknown). `rebased`: the
  /// FPS line was reset before this step began (FpsTracker::reset()); `since_previous_end_s` is
  /// then measured from the step's own start, which begins the device clock and the FPS sample
  /// afresh, and the step has no period (the time before it is not the loop's).
  const DeviceStep& add(std::uint64_t step, bool completed, double step_s,
                        double since_previous_end_s, bool rebased = false);
  /// Completes the FPS sample in progress (the end of a run), when the line is fed from here.
  void flush();

  /// The step added last.
  const DeviceStep& latest() const noexcept { return latest_; }
  /// Steps added so far.
  std::uint64_t steps() const noexcept { return added_; }
  /// Step indices skipped between the steps added: steps that left no device time.
  std::uint64_t missed() const noexcept { return missed_; }
  /// Steps added that completed on the host (neither vetoed nor aborted).
  std::uint64_t completed() const noexcept { return completed_; }
  /// Mean over the completed steps whose span was timed; NaN when none.
  double mean_step_s() const noexcept;
  /// Mean over the periods taken (DeviceStep::period_s); NaN when none.
  double mean_period_s() const noexcept;
  /// Periods taken (steps whose period_s is a number).
  std::uint64_t periods() const noexcept { return periods_; }
  /// Whether the profiler's FPS line is fed from here (the device clock).
  bool feeds_fps() const noexcept { return feed_fps_; }

 private:
  StepProfiler& prof_;
  bool feed_fps_;
  FpsTracker::DeviceClockClaim fps_clock_;
  bool have_previous_ = false;
  bool clock_valid_ = false;  // end_ns is on a running clock that began at an earlier step
  double clock_ns_ = 0;
  DeviceStep latest_;
  std::uint64_t added_ = 0, missed_ = 0, completed_ = 0, periods_ = 0, spans_ = 0;
  double step_sum_ = 0, period_sum_ = 0;
};

}  // namespace simprof
