// SPDX-License-Identifier: MIT
#include "range_record.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "simprof/profiler/report.hpp"

namespace simprof::run {

record::Json range_record(const StepProfiler& prof, const RangeSteps& steps,
                          const std::string& asked, const std::string& command, bool final) {
  using record::Json;
  const RangeCounts& c = steps.counts();
  Json seen = Json::object();
  for (const auto& [name, n] : steps.seen()) seen[name] = n;
  Json doc = {{"schema", kRunSchema},
              {"provenance", record::provenance("simprof run", command)},
              {"final", final},
              {"clock", "host"},
              {"step_range", steps.step_chosen() ? Json(steps.step_name()) : Json(nullptr)},
              {"step_chosen_by", asked.empty() ? "the outermost range that repeats" : "--step"},
              {"n_envs", prof.n_envs()},
              {"steps", steps.steps()},
              {"stages", steps.steps() > 0 ? record::stage_rows_json(stage_rows(prof), &prof)
                                           : Json::array()},
              {"ranges_seen", std::move(seen)},
              {"counts",
               {{"pushes", c.pushes},
                {"pops", c.pops},
                {"unmatched_pops", c.unmatched_pops},
                {"open_at_end", steps.open_at_end()},
                {"other_threads", c.other_threads},
                {"left_out", c.left_out},
                {"step_changes", c.step_changes}}}};
  return doc;
}

void write_atomically(const std::string& path, const record::Json& doc) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::out | std::ios::trunc);
    out << doc.dump(2) << '\n';
    out.flush();
    if (!out)
      throw std::runtime_error(fmt::format("--json {}: cannot write {} ({})", path, tmp,
                                           errno ? std::strerror(errno) : "unknown reason"));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error(
        fmt::format("--json {}: cannot rename {} over it ({})", path, tmp, std::strerror(errno)));
}

}  // namespace simprof::run
