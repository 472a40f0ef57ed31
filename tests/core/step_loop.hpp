// SPDX-License-Identifier: MIT
// The step profiler tests' loop on a manual clock (test_step_profiler*.cpp).
#pragma once

#include <cstddef>

#include "simprof/base/manual_clock.hpp"
#include "simprof/profiler/step_profiler.hpp"

namespace simprof::testing::steps {

inline ProfilingOptions quiet(std::size_t window = 1) {
  ProfilingOptions o;
  o.show_fps = false;
  o.timings_window = window;
  return o;
}

// A Genesis-like step: physics 3 ms, two sensor classes 1 ms and 0.5 ms, rendering 2 ms.
struct Loop {
  ManualClock mc;
  StepProfiler prof;
  explicit Loop(ProfilingOptions o = quiet()) : prof(o, 4, mc.clock()) {}
  void step(double physics = 0.003, bool sensors = true, double between = 0.001) {
    {
      auto s = prof.step();
      mc.advance(0.0001);  // pre-step work inside the step call
      {
        auto p = prof.stage("physics");
        mc.advance(physics);
      }
      if (sensors) {
        auto a = prof.stage("sensors/Imu");
        mc.advance(0.001);
      }
      if (sensors) {
        auto b = prof.stage("sensors/Camera");
        mc.advance(0.0005);
      }
      {
        auto r = prof.stage("rendering");
        mc.advance(0.002);
      }
    }
    mc.advance(between);
  }
};

}  // namespace simprof::testing::steps
