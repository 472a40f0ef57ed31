// SPDX-License-Identifier: MIT
// The CUDA engine: the CPU engine's physics, in kernels that call the same per-env functions
// (physics.hpp), split into several kernels per step as real engines are (per substep: forces,
// contacts, integration; then the IMU, the depth camera at one thread per pixel, the recorder).
// All state lives in persistent device buffers, so enqueue_step() can be captured into a graph and
// replayed; the recorder's frame counter lives on the device for the same reason.
//
//   simprof::engine::CudaEngine engine(params, 30000);
//   engine.attach(prof);                        // stage scopes around the launches
//   cache.run({30000}, [&](cudaStream_t s) { engine.enqueue_step(s); });
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "demo_engine/physics.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/profiler/macros.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/timers/timer_view.hpp"

namespace simprof::engine {

class CudaEngine {
 public:
  /// Allocates and initialises the batch on the device (synchronously, on `stream`).
  CudaEngine(const Params& params, int n_envs, cudaStream_t stream, std::uint32_t seed = 1234);

  void attach(StepProfiler& prof);
  /// Enqueues one step on `stream`; capturable (no allocation, no synchronisation, no host data).
  void enqueue_step(cudaStream_t stream);
  /// The fused solver (all substeps of the physics in one kernel, solver_env per env), timed per
  /// env into `timers` (rows: SolverTimer) when given. Uses the control targets when control_gain >
  /// 0.
  void enqueue_solver(cudaStream_t stream, const TimerView* timers);
  /// IMU, depth camera and recorder: the rest of a step.
  void enqueue_sensors(cudaStream_t stream);
  /// Stages the envs' control targets (3 floats per env) into the persistent target buffer.
  void set_targets(const std::vector<float>& targets, cudaStream_t stream);
  /// px, py, pz, vx, vy, vz concatenated, as CpuEngine::snapshot() (synchronises `stream`).
  std::vector<float> snapshot(cudaStream_t stream) const;
  /// Copies the positions (px, py, pz: n_envs * n_spheres floats each) into `x`, `y`, `z` on
  /// `stream`: a snapshot that a renderer can read while the physics goes on (dual_graph).
  void publish_positions(cudaStream_t stream, float* x, float* y, float* z) const;
  /// The depth camera (one thread per pixel) over the positions in `x`, `y`, `z` instead of the
  /// live state, into the engine's depth buffer.
  void enqueue_render_from(cudaStream_t stream, const float* x, const float* y, const float* z);
  /// The depth images, n_envs * image_width * image_height floats (synchronises `stream`).
  std::vector<float> depth(cudaStream_t stream) const;
  /// Device views of the state (for solvers that work on it: contact_solver.hpp).
  State state() const;
  /// Spheres in the batch: n_envs * n_spheres.
  std::size_t bodies() const { return px_.size(); }
  const Params& params() const { return params_; }
  /// Kernels per step.
  int kernels_per_step() const { return 3 * params_.substeps + 4; }
  int n_envs() const { return n_envs_; }

 private:
  Sensors sensors() const;

  Params params_;
  int n_envs_;
  cuda::DeviceBuffer<float> px_, py_, pz_, vx_, vy_, vz_, fx_, fy_, fz_;
  cuda::DeviceBuffer<float> imu_prev_, imu_, depth_, record_;
  cuda::DeviceBuffer<long long> frame_;
  cuda::DeviceBuffer<float> targets_;
  StepProfiler* prof_ = nullptr;  // the stages are SIMPROF_STAGE call sites
};

}  // namespace simprof::engine
