// SPDX-License-Identifier: MIT
// Text reports of a StepProfiler, for the end of a run.
//
/* clang-format off */
//   fmt::print("{}", simprof::stage_table(prof));
//   // stage            mean us    sd us   p50 us   p95 us   p99 us   share   steps
//   // physics            812.4     31.0    801.0    903.2    951.7   61.2%     200
//   //   physics/contacts       402.1 ...
/* clang-format on */
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "simprof/base/stats.hpp"
#include "simprof/profiler/step_profiler.hpp"

namespace simprof {

/// The rows of a stage report: f(StageId id, int depth) for every stage, depth-first so each child
/// follows its parent (siblings in registration order), then "step" and "period" at depth 0.
template <class F>
void for_each_stage_row(const StepProfiler& prof, F&& f) {
  auto visit = [&](auto& self, StageId parent, int depth) -> void {
    for (StageId id = kPeriodStage + 1; id < prof.num_stages(); ++id)
      if (prof.stage_parent(id) == parent) {
        f(id, depth);
        self(self, id, depth + 1);
      }
  };
  visit(visit, kNoStage, 0);
  f(kStepStage, 0);
  f(kPeriodStage, 0);
}

/// The stage's name indented two spaces per level, for report tables.
std::string stage_label(const StepProfiler& prof, StageId id, int depth);

/// One row of stage_table(), for writers of other formats (JSON, CSV).
struct StageRow {
  /// The stage's id (kStepStage / kPeriodStage for "step" and "period").
  StageId id = kNoStage;
  /// The stage's name.
  std::string name;
  int depth = 0;         ///< nesting level: 0 for top-level stages, "step" and "period"
  LatencyStats stats;    ///< of the stage's totals per step, over the stats window (seconds)
  double share = 0;      ///< percent of all the window's step time (period: of the same)
  bool partial = false;  ///< ran in fewer of the window's steps than "step" did (not period)
  /// The samples behind `stats`, oldest first, in seconds (history()).
  std::vector<double> samples;
  /// The clock the engine timed the stage with (set_stage_clock()); "" for simprof's.
  std::string clock;
};

/// stage_table()'s rows: the stages that ran in the stats window, in table order. Needs
/// stats_window > 0 (std::invalid_argument otherwise).
std::vector<StageRow> stage_rows(const StepProfiler& prof);

/// One row per stage that ran in the stats window, children indented under their parent, then
/// "step" and "period": mean, sd, p50, p95 and p99 in microseconds, the stage's share of all the
/// window's step time (its total over the step's total, so a stage that ran in only some steps
/// never shows more than the time it took: marked "*" with a footnote) and its step count. Needs
/// stats_window > 0 (std::invalid_argument otherwise).
std::string stage_table(const StepProfiler& prof);

/// stage_table() of rows from anywhere (a device clock's, say): each name indented two spaces per
/// depth, the footnote's step count from the "step" row (id kStepStage).
std::string format_stage_rows(const std::vector<StageRow>& rows);

namespace detail {
/// format_stage_rows() with columns added to every row.
std::string format_stage_rows_with(const std::vector<StageRow>& rows,
                                   const std::string& extra_header,
                                   const std::function<std::string(const StageRow&)>& extra);
/// stage_table() with columns added to every row (the memory tracker's): `extra_header` after the
/// header, extra(row) after each row.
std::string stage_table_with(const StepProfiler& prof, const std::string& extra_header,
                             const std::function<std::string(const StageRow&)>& extra);
}  // namespace detail

}  // namespace simprof
