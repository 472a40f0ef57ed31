// SPDX-License-Identifier: MIT
#include "range_record.hpp"

#include "simprof/profiler/report.hpp"

namespace simprof::run {

record::Json range_record(const StepProfiler& prof, const RangeSteps& steps,
                          const std::string& asked, const std::string& command, bool final) {
  using record::Json;
  const RangeCounts& c = steps.counts();
  Json seen = Json::object();
  for (const auto& [name, n] : steps.seen()) seen[name] = n;
  Json doc = record::record_head(
      "simprof run", command,
      {{"step_range", steps.step_chosen() ? Json(steps.step_name()) : Json(nullptr)},
       {"n_envs", prof.n_envs()}});
  doc.update(Json{
      {"final", final},
      {"clock", "host"},
      {"step_range", steps.step_chosen() ? Json(steps.step_name()) : Json(nullptr)},
      {"step_chosen_by", asked.empty() ? "the outermost range that repeats" : "--step"},
      {"n_envs", prof.n_envs()},
      {"steps", steps.steps()},
      {"stages", steps.steps() > 0 ? record::stage_rows_json(stage_rows(prof)) : Json::array()},
      {"fps", record::fps_json(prof.fps())},
      {"ranges_seen", std::move(seen)},
      {"counts",
       {{"pushes", c.pushes},
        {"pops", c.pops},
        {"unmatched_pops", c.unmatched_pops},
        {"unclosed", c.unclosed},
        {"crossed", c.crossed},
        {"unnamed", c.unnamed},
        {"open_at_end", steps.open_at_end()},
        {"other_threads", c.other_threads},
        {"left_out", c.left_out},
        {"step_changes", c.step_changes}}}});
  return doc;
}

}  // namespace simprof::run
