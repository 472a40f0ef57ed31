// SPDX-License-Identifier: MIT
// One backend of the timers example: steps the engine through its instrumented solver and hands
// back frames of the per-env timers.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "demo_engine/physics.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/timers/timer_stats.hpp"

namespace simprof::examples {

class TimerRun {
 public:
  virtual ~TimerRun() = default;
  virtual void set_targets(const std::vector<float>& targets) = 0;
  /// One step: the instrumented solver, then the sensors.
  virtual void step() = 0;
  /// The newest frame of timer readings not seen before (CUDA: without waiting), or nullopt.
  virtual std::optional<TimerFrame> latest() = 0;
  /// Waits for outstanding work (end of run).
  virtual void finish() {}
  virtual const char* unit() const = 0;
};

std::unique_ptr<TimerRun> make_cuda_run(const engine::Params& params, int n_envs,
                                        StepProfiler& prof);

}  // namespace simprof::examples
