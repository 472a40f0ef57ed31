// SPDX-License-Identifier: MIT
// `simprof run --json FILE`: the run record (schema "simprof.run/1"), and its atomic write (a
// temporary file renamed over FILE, so a reader or a crash never sees half of one). Private to
// src/run.
#pragma once

#include <string>

#include "../record/run_json.hpp"
#include "range_steps.hpp"
#include "simprof/profiler/step_profiler.hpp"

namespace simprof::run {

inline constexpr const char* kRunSchema = "simprof.run/1";

// The record: provenance, the step range and how it was chosen, the clock, n_envs, the steps, the
// stage rows (stage_rows_json), the ranges seen and the counts of what went wrong. `final`: the
// program ended (false: a snapshot while it runs).
record::Json range_record(const StepProfiler& prof, const RangeSteps& steps,
                          const std::string& asked, const std::string& command, bool final);

// Writes `doc` to `path` atomically; std::runtime_error naming the path and the reason.
void write_atomically(const std::string& path, const record::Json& doc);

}  // namespace simprof::run
