// SPDX-License-Identifier: MIT
// Pictures of per-env timers: terminal panels readable over ssh, and a self-contained SVG.
//
/* clang-format off */
//   std::fputs(simprof::terminal_plot(stats, row).c_str(), stdout);
//   simprof::write_file_atomic("timers.svg", simprof::timers_svg(stats));
/* clang-format on */
#pragma once

#include <string>

#include "simprof/timers/timer_stats.hpp"

namespace simprof {

/// The size and characters of a terminal_plot().
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

}  // namespace simprof
