// SPDX-License-Identifier: MIT
// What every run record shares (the examples' --json FILE, speed_benchmark's, `simprof run
// --json`): where the figures came from (the provenance: tool, commit, build, compiler, date, host,
// CPU, command) and the host stage rows in one shape, so a figure in any of them can be traced to
// its machine, build and command. Private to simprof's tools (target simprof_record).
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simprof/profiler/report.hpp"
#include "simprof/profiler/step_profiler.hpp"

namespace simprof::record {

using Json = nlohmann::ordered_json;

/// `v` as JSON; NaN and infinities (not JSON) as null: "no value".
Json number(double v);

/// argv joined by spaces: the command as it was typed.
std::string command_line(int argc, char** argv);

/// {"tool", "simprof_commit", "build_type", "compiler", "date_utc", "host", "cpu", "cpus",
/// "nvidia_driver", "command"}: the commit and build type are the ones this binary was configured
/// from; "nvidia_driver" is the kernel driver's version ("580.159.04"), null where none is loaded.
Json provenance(const std::string& tool, const std::string& command);

/// --json FILE: opened when made, so that a missing directory or an unwritable path fails before a
/// long run (std::runtime_error naming the path and the reason); write() writes the document and
/// says when that failed.
class JsonFile {
 public:
  explicit JsonFile(const std::string& path);
  /// `doc`, indented, then a newline; std::runtime_error naming the path when the write fails.
  void write(const Json& doc);
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  std::ofstream out_;
};

/// The rows of stage_rows()/stage_table(): stage, depth, steps, mean/sd/p50/p95/p99 in seconds,
/// share of the step, and whether the stage ran in fewer steps. With `prof`, a stage timed on
/// another clock than simprof's (set_stage_clock) names it ("clock").
Json stage_rows_json(const std::vector<StageRow>& rows, const StepProfiler* prof = nullptr);

}  // namespace simprof::record
