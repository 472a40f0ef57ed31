// SPDX-License-Identifier: MIT
// What every tool's run record shares (the examples' --json FILE, speed_benchmark's, `simprof run
// --json`), as nlohmann JSON over the core's run record (simprof/profiler/run_record.hpp): the
// provenance, the stage rows with their samples, the FPS line, so any record can be traced to its
// machine, build and command, and compared. Private to simprof's tools (target simprof_record).
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simprof/profiler/report.hpp"
#include "simprof/profiler/run_record.hpp"
#include "simprof/profiler/step_profiler.hpp"

namespace simprof::record {

using Json = nlohmann::ordered_json;

/// `v` as JSON; NaN and infinities (not JSON) as null: "no value".
Json number(double v);

/// argv joined by spaces: the command as it was typed.
std::string command_line(int argc, char** argv);

/// The core's provenance (simprof::detail::provenance_json): tool, commit, build type, compiler,
/// date, host, CPU, NVIDIA driver, GPUs and their clocks, command.
Json provenance(const std::string& tool, const std::string& command);

/// The head of every record: {"schema": kRunRecordSchema, "provenance", "workload"}. `workload`
/// holds what decides the work of a step (n_envs, model, mode): `simprof compare` refuses records
/// whose workloads differ.
Json record_head(const std::string& tool, const std::string& command, Json workload);

/// The FPS line: clock, rate, samples and the unsmoothed rates `simprof compare` tests.
Json fps_json(const FpsTracker& fps);

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
/// share of the step, whether the stage ran in fewer steps, the engine's clock where one timed it,
/// and the samples (at most kRunRecordSamples).
Json stage_rows_json(const std::vector<StageRow>& rows);

}  // namespace simprof::record
