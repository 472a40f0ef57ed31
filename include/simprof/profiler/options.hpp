// SPDX-License-Identifier: MIT
// ProfilingOptions: what a StepProfiler measures and prints; the counterpart of Genesis's
// gs.options.ProfilingOptions, with validation.
//
/* clang-format off */
//   simprof::ProfilingOptions opt;
//   opt.fps_tracker_alpha = 0.9;
//   opt = simprof::ProfilingOptions::from_env(opt);  // SIMPROF_* variables override, validated
//   opt.validate();                                   // std::invalid_argument naming the field
/* clang-format on */
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "simprof/base/clock.hpp"

namespace simprof {

/// How a StepProfiler measures and reports: the FPS line, the timings and statistics windows,
/// and the clock.
struct ProfilingOptions {
  /// Print the smoothed step rate, one line per sample. Can be switched on a running profiler
  /// (StepProfiler::set_show_fps); the rate is computed either way.
  bool show_fps = true;
  /// EMA momentum of the smoothed rate, in [0, 1]: larger reacts slower and reads steadier.
  double fps_tracker_alpha = 0.95;
  /// A sample ends at the first step at least this long after the sample began.
  std::chrono::nanoseconds fps_sample_interval = std::chrono::milliseconds(50);
  /// Each published stage time is the mean over the latest N steps that ran the stage (1: latest).
  std::size_t timings_window = 1;
  /// Per-stage latency samples kept for stats(), histograms and stage_table(); 0 (the default)
  /// keeps none. Turning it on costs about one ring store per stage per step.
  std::size_t stats_window = 0;
  /// The counter that timestamps steps and stages.
  ClockSource clock = ClockSource::kAuto;

  /// Throws std::invalid_argument whose message names the field, the value and what was expected.
  void validate() const;

  /// `base` with these environment variables applied, each validated (an unparsable or invalid
  /// value throws std::invalid_argument naming the variable):
  ///   SIMPROF_SHOW_FPS (0/1/true/false/on/off), SIMPROF_FPS_ALPHA, SIMPROF_FPS_INTERVAL_MS,
  ///   SIMPROF_TIMINGS_WINDOW, SIMPROF_STATS_WINDOW, SIMPROF_CLOCK (auto/steady/tsc).
  static ProfilingOptions from_env(ProfilingOptions base);
  /// The defaults with the environment variables applied (from_env(ProfilingOptions{})).
  static ProfilingOptions from_env() { return from_env(ProfilingOptions{}); }

  /// One line for logs: "show_fps=true fps_tracker_alpha=0.95 ...".
  std::string to_string() const;
};

}  // namespace simprof
