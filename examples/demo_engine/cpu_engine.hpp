// SPDX-License-Identifier: MIT
// The CPU engine: owns the batch's arrays and runs each stage as a loop over envs, instrumented
// with a StepProfiler in the stages a Genesis user knows (physics with sub-stages, sensors/Imu,
// rendering, recorders).
//
//   simprof::engine::CpuEngine engine(params, 4096);
//   simprof::StepProfiler prof(options, 4096);
//   engine.attach(prof);
//   for (int i = 0; i < 1000; ++i) engine.step();
#pragma once

#include <cstdint>
#include <vector>

#include "demo_engine/physics.hpp"
#include "simprof/profiler/macros.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/timers/timer_view.hpp"

namespace simprof::engine {

class CpuEngine {
 public:
  CpuEngine(const Params& params, int n_envs, std::uint32_t seed = 1234);

  /// Profiles the stages of step() from now on: they are SIMPROF_STAGE call sites, which look
  /// their ids up on the first pass, so a step does no string work after that.
  void attach(StepProfiler& prof);
  /// One step; instrumented when a profiler is attached.
  void step();
  /// One step through the fused per-env solver, timed per env into `timers` (rows: SolverTimer)
  /// when given, then the sensors. Uses the control targets when control_gain > 0.
  void step_solver(const TimerView* timers);
  /// The envs' control targets, 3 floats per env.
  void set_targets(const std::vector<float>& targets);

  int n_envs() const { return n_envs_; }
  const Params& params() const { return params_; }
  State state();
  Sensors sensors();
  const std::vector<float>& positions_x() const { return px_; }
  /// All state arrays concatenated (px, py, pz, vx, vy, vz), for comparisons.
  std::vector<float> snapshot() const;
  long long frames() const { return frame_; }

 private:
  Params params_;
  int n_envs_;
  std::vector<float> px_, py_, pz_, vx_, vy_, vz_, fx_, fy_, fz_;
  std::vector<float> imu_prev_, imu_, depth_, record_, targets_;
  void sensors_step();
  long long frame_ = 0;
  StepProfiler* prof_ = nullptr;  // the stages are SIMPROF_STAGE call sites
};

}  // namespace simprof::engine
