// SPDX-License-Identifier: MIT
#include "simprof/profiler/report.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace simprof {

std::string stage_label(const StepProfiler& prof, StageId id, int depth) {
  return std::string(2 * static_cast<std::size_t>(depth), ' ') + std::string(prof.stage_name(id));
}

std::string stage_table(const StepProfiler& prof) {
  if (prof.options().stats_window == 0)
    throw std::invalid_argument("simprof: stage_table needs stats_window > 0 (it is 0)");
  const auto step = prof.stats("step");
  const double step_total = step.mean * static_cast<double>(step.count);
  std::size_t partial = 0;  // stages that ran in fewer steps of the window than "step" counts
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "{:<28} {:>10} {:>9} {:>10} {:>10} {:>10} {:>7} {:>7}\n",
                 "stage", "mean us", "sd us", "p50 us", "p95 us", "p99 us", "share", "steps");
  for_each_stage_row(prof, [&](StageId id, int depth) {
    const auto s = prof.stats(prof.stage_name(id));
    if (s.count == 0) return;
    const std::string label = stage_label(prof, id, depth);
    // The share of all the window's step time: a stage that ran in only some steps (the capture
    // of a replayed graph, say) gets its part of the time of all of them, not of its own steps.
    const double share =
        step_total > 0 ? 100.0 * s.mean * static_cast<double>(s.count) / step_total : 0.0;
    const bool some = id != kPeriodStage && s.count < step.count;
    partial += some;
    fmt::format_to(std::back_inserter(out),
                   "{:<28} {:>10.1f} {:>9.1f} {:>10.1f} {:>10.1f} {:>10.1f} {:>6.1f}% {:>7}{}\n",
                   label, s.mean * 1e6, s.stddev * 1e6, s.p50 * 1e6, s.p95 * 1e6, s.p99 * 1e6,
                   share, s.count, some ? "*" : "");
  });
  if (partial)
    fmt::format_to(std::back_inserter(out),
                   "* ran in fewer steps than the {} in the window; share: of all their time\n",
                   step.count);
  return fmt::to_string(out);
}

}  // namespace simprof
