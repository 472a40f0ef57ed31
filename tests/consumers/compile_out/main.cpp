// SPDX-License-Identifier: MIT
// Runs the engine with a profiler where simprof is compiled in, and without one where it is not.
#include <cstdio>

#include <simprof/profiler/macros.hpp>
#if SIMPROF_ENABLED
#include <simprof/simprof.hpp>
#endif

double simulate(simprof::StepProfiler* prof, int steps);

int main() {
#if SIMPROF_ENABLED
  simprof::ProfilingOptions options;
  options.show_fps = false;
  simprof::StepProfiler prof(options, 16);
  const double x = simulate(&prof, 3);
  const bool ok =
      prof.steps() == 3 && prof.timings().contains("physics") && prof.timings().contains("sensors");
#else
  const double x = simulate(nullptr, 3);
  const bool ok = true;
#endif
  std::printf("%s (simprof %s, x = %.4f)\n", ok ? "consumer ok" : "consumer FAILED",
              SIMPROF_ENABLED ? "on" : "compiled out", x);
  return ok ? 0 : 1;
}
