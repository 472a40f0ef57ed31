// SPDX-License-Identifier: MIT
// StepPacer: at most `max_in_flight` steps queued on the GPU, and the GPU's own step times.
//
// A GPU step loop only enqueues: without a bound the host runs hundreds of steps ahead until the
// launch queue fills, and everything timed on the host (the FPS line, the loop period) says how
// fast the host enqueues, not how fast the GPU simulates. Attached to a profiler, the pacer records
// an event on the engine's stream at every step's start and end (after the step's launches: a
// replayed graph's end event completes with the graph) and, when a step begins, waits until the
// step `max_in_flight` before it has ended on the GPU, as game engines bound frames in flight. In
// steady state the loop then runs at the GPU's rate and the host stays a bounded distance ahead.
//
// The events also time each step on the device: its span (start event to end event) and the time
// since the step before ended. They go to a DeviceSteps (profiler/device_steps.hpp), which by
// default feeds the profiler's FPS line from the GPU's step-end times ("GPU clock" in the line).
//
/* clang-format off */
//   simprof::cuda::StepPacer pacer(prof, stream);          // 2 steps in flight, FPS on the GPU clock
//   for (int i = 0; i < n; ++i) { auto step = prof.step(); cache.run({n_envs}, body); }
//   pacer.finish();                                         // the last steps' times, a final sample
//   pacer.device_steps().mean_period_s();                   // seconds per step on the GPU
/* clang-format on */
//
// Cost: two event records per step on the stream (no kernel) and, when the GPU is behind, the
// host waiting for it — which is the point.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "simprof/cuda/stream.hpp"
#include "simprof/profiler/device_steps.hpp"
#include "simprof/profiler/listener.hpp"
#include "simprof/profiler/step_profiler.hpp"

namespace simprof::cuda {

struct StepPacerOptions {
  int max_in_flight = 2;        ///< steps the GPU may hold queued when a new one begins (>= 1)
  bool fps_from_device = true;  ///< feed the profiler's FPS line from the GPU's step-end times
};

struct StepPacerCounters {
  std::uint64_t steps = 0;       ///< steps recorded
  std::uint64_t waits = 0;       ///< steps whose start waited for the GPU
  double wait_s = 0;             ///< host seconds spent waiting (steady clock)
  std::uint64_t most_ahead = 0;  ///< most steps queued on the GPU seen when a step began
};

class StepPacer : public StepListener {
 public:
  /// Attaches to `prof`; `stream` is the one the engine's steps end on. Throws
  /// std::invalid_argument for max_in_flight < 1, CudaError when the events cannot be made.
  StepPacer(StepProfiler& prof, cudaStream_t stream, StepPacerOptions options = {});
  ~StepPacer() override;
  StepPacer(const StepPacer&) = delete;
  StepPacer& operator=(const StepPacer&) = delete;

  /// Waits for every step recorded so far, takes in their device times and completes the FPS
  /// sample in progress: call at the end of a run, before reading results.
  void finish();
  /// The device times of the steps taken in so far (in step order).
  const DeviceSteps& device_steps() const noexcept { return steps_; }
  const StepPacerCounters& counters() const noexcept { return counters_; }
  const StepPacerOptions& options() const noexcept { return options_; }
  /// Called with each step's device times when they are taken in, in step order (for tools that
  /// join other device readings to the step: DeviceStageTimer).
  void set_on_step(std::function<void(const DeviceStep&)> f) { on_step_ = std::move(f); }
  void set_stream(cudaStream_t stream) noexcept { stream_ = stream; }

  void on_step_begin(std::uint64_t step, std::int64_t ticks) override;
  void on_step_end(std::uint64_t step, std::int64_t ticks, StepOutcome outcome) override;

 private:
  struct Slot {
    Event begin, end;
    std::uint64_t step = 0;
    bool completed = false;
  };
  /// Takes in the recorded steps whose end event completed (all of them when `wait`).
  void take_in(bool wait) noexcept;
  void report(const char* call, cudaError_t e) noexcept;

  StepProfiler& prof_;
  cudaStream_t stream_;
  StepPacerOptions options_;
  std::vector<Slot> ring_;      // max_in_flight + 2: a step's end event outlives the next step's
  std::uint64_t recorded_ = 0;  // steps whose end event is recorded
  std::uint64_t taken_ = 0;     // steps taken in
  bool open_ = false;           // a step began and its begin event is recorded
  DeviceSteps steps_;
  StepPacerCounters counters_;
  std::function<void(const DeviceStep&)> on_step_;
  bool reported_ = false;
};

}  // namespace simprof::cuda
