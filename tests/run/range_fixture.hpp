// SPDX-License-Identifier: MIT
// What the `simprof run` range tests share: a quiet profiler on an injected clock.
#pragma once

#include "simprof/base/manual_clock.hpp"
#include "simprof/profiler/step_profiler.hpp"

namespace simprof::run::testing {

inline ProfilingOptions quiet() {
  ProfilingOptions o;
  o.show_fps = false;
  o.stats_window = 64;
  return o;
}

struct Fixture {
  ManualClock clock;
  StepProfiler prof{quiet(), 0, clock.clock()};
};

}  // namespace simprof::run::testing
