// SPDX-License-Identifier: MIT
// A consumer's engine: instrumented with the macros only, so a release build can compile simprof
// out.
#include <simprof/profiler/macros.hpp>

double simulate(simprof::StepProfiler* prof, int steps) {
  double x = 1.0;
  for (int i = 0; i < steps; ++i) {
    SIMPROF_STEP(prof);
    {
      SIMPROF_STAGE(prof, "physics");
      x = x * 0.5 + 1.0;
    }
    {
      SIMPROF_STAGE(prof, "sensors/Imu");
      x += 0.25;
    }
  }
  return x;
}
