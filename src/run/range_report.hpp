// SPDX-License-Identifier: MIT
// What `simprof run` says at exit (and on SIGUSR1): the step range and how many steps ran, the
// stage table, and what went wrong with the program's ranges. Private to src/run.
#pragma once

#include <string>

#include "range_steps.hpp"
#include "simprof/profiler/step_profiler.hpp"

namespace simprof::run {

// `asked`: the --step name ("" when the step was chosen); `final`: at exit (false: SIGUSR1).
std::string range_report(const StepProfiler& prof, const RangeSteps& steps,
                         const std::string& asked, bool final = true);

}  // namespace simprof::run
