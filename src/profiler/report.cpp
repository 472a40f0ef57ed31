// SPDX-License-Identifier: MIT
#include "simprof/profiler/report.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace simprof {

std::string stage_label(const StepProfiler& prof, StageId id, int depth) {
  return std::string(2 * static_cast<std::size_t>(depth), ' ') + std::string(prof.stage_name(id));
}

std::vector<StageRow> stage_rows(const StepProfiler& prof) {
  if (prof.options().stats_window == 0)
    throw std::invalid_argument("simprof: stage_table needs stats_window > 0 (it is 0)");
  const auto step = prof.stats(kStepStage);
  const double step_total = step.mean * static_cast<double>(step.count);
  std::vector<StageRow> rows;
  for_each_stage_row(prof, [&](StageId id, int depth) {
    StageRow r;
    r.stats = prof.stats(id);
    if (r.stats.count == 0) return;
    r.id = id;
    r.name = std::string(prof.stage_name(id));
    r.depth = depth;
    // The share of all the window's step time: a stage that ran in only some steps (the capture
    // of a replayed graph, say) gets its part of the time of all of them, not of its own steps.
    // (The ratio first: 100 * t / t can round to 100.00000000000001; t / t is exactly 1.)
    r.share = step_total > 0
                  ? 100.0 * (r.stats.mean * static_cast<double>(r.stats.count) / step_total)
                  : 0.0;
    r.partial = id != kPeriodStage && r.stats.count < step.count;
    r.samples = prof.history(id);
    r.clock = std::string(prof.stage_clock(id));
    rows.push_back(std::move(r));
  });
  return rows;
}

std::string stage_table(const StepProfiler& prof) { return format_stage_rows(stage_rows(prof)); }

std::string format_stage_rows(const std::vector<StageRow>& rows) {
  return detail::format_stage_rows_with(rows, "", [](const StageRow&) { return std::string(); });
}

std::string detail::stage_table_with(const StepProfiler& prof, const std::string& extra_header,
                                     const std::function<std::string(const StageRow&)>& extra) {
  return format_stage_rows_with(stage_rows(prof), extra_header, extra);
}

std::string detail::format_stage_rows_with(
    const std::vector<StageRow>& rows, const std::string& extra_header,
    const std::function<std::string(const StageRow&)>& extra) {
  std::size_t partial = 0, steps = 0;
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out),
                 "{:<28} {:>10} {:>9} {:>10} {:>10} {:>10} {:>7} {:>7}{}\n", "stage", "mean us",
                 "sd us", "p50 us", "p95 us", "p99 us", "share", "steps", extra_header);
  for (const StageRow& r : rows) {
    const LatencyStats& s = r.stats;
    partial += r.partial;
    if (r.id == kStepStage) steps = s.count;
    fmt::format_to(std::back_inserter(out),
                   "{:<28} {:>10.1f} {:>9.1f} {:>10.1f} {:>10.1f} {:>10.1f} {:>6.1f}% {:>7}{}{}\n",
                   std::string(2 * static_cast<std::size_t>(r.depth), ' ') + r.name, s.mean * 1e6,
                   s.stddev * 1e6, s.p50 * 1e6, s.p95 * 1e6, s.p99 * 1e6, r.share, s.count,
                   r.partial ? "*" : (extra_header.empty() ? "" : " "), extra(r));
  }
  if (partial)
    fmt::format_to(std::back_inserter(out),
                   "* ran in fewer steps than the {} in the window; share: of all their time\n",
                   steps);
  return fmt::to_string(out);
}

}  // namespace simprof
