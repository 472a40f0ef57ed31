// SPDX-License-Identifier: MIT
// Text reports of a StepProfiler, for the end of a run.
//
//   fmt::print("{}", simprof::stage_table(prof));
//   // stage            mean us    sd us   p50 us   p95 us   p99 us   share   steps
//   // physics            812.4     31.0    801.0    903.2    951.7   61.2%     200
//   //   physics/contacts       402.1 ...
#pragma once

#include <string>

#include "simprof/step_profiler.hpp"

namespace simprof {

/// One row per stage that ran in the stats window, children indented under their parent, then
/// "step" and "period": mean, p50 and p95 in microseconds and the mean's share of the mean step.
/// Needs stats_window > 0 (std::invalid_argument otherwise).
std::string stage_table(const StepProfiler& prof);

}  // namespace simprof
