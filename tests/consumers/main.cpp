// SPDX-License-Identifier: MIT
// The smallest real use of simprof::core, built by ctest as an outside project.
#include <cstdio>

#include <simprof/simprof.hpp>

int main() {
  simprof::ManualClock mc;
  simprof::ProfilingOptions options;
  options.show_fps = false;
  simprof::StepProfiler prof(options, 16, mc.clock());
  for (int i = 0; i < 3; ++i) {
    auto step = prof.step();
    auto s = prof.stage("physics");
    mc.advance(0.001);
  }
  const bool ok = prof.timings().contains("physics") && prof.timings().contains("period");
  std::printf("%s\n", ok ? "consumer ok" : "consumer FAILED");
  return ok ? 0 : 1;
}
