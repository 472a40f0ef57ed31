// SPDX-License-Identifier: MIT
// `simprof run --json FILE`: the run record (schema simprof.run/2, as every run record), written
// atomically (write_file_atomic: a reader or a crash never sees half of one). Private to src/run.
#pragma once

#include <string>

#include "../record/run_json.hpp"
#include "range_steps.hpp"
#include "simprof/profiler/step_profiler.hpp"

namespace simprof::run {

// The record: provenance, the step range and how it was chosen, the clock, n_envs, the steps, the
// stage rows (stage_rows_json), the ranges seen and the counts of what went wrong. `final`: the
// program ended (false: a snapshot while it runs).
record::Json range_record(const StepProfiler& prof, const RangeSteps& steps,
                          const std::string& asked, const std::string& command, bool final);

}  // namespace simprof::run
