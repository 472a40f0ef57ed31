// SPDX-License-Identifier: MIT
// StepPacer: at most `max_in_flight` steps queued on the GPU, and the GPU's own step times.
//
// A GPU step loop only enqueues: without a bound the host runs hundreds of steps ahead until the
// launch queue fills, and everything timed on the host (the FPS line, the loop period) says how
// fast the host enqueues, not how fast the GPU simulates. Attached to a profiler, the pacer records
// an event on the engine's stream at the end of every step (after the step's launches, so a
// replayed graph's end event completes with the graph) and, when a step begins, waits until the
// step `max_in_flight` before it has ended on the GPU, as game engines bound frames in flight: at
// most max_in_flight steps are enqueued and unfinished, the new one included. In steady state the
// loop then runs at the GPU's rate.
//
// The end events of every mark_every-th step (and of every spanned one) are timed; the others only
// order (cudaEventDisableTiming). The timed ones time the steps on the device: the time since the
// mark before, shared by the steps between (with mark_every 1: every step's own period), and the
// step's span from a start event (one step in span_every). The first step after the FPS line's
// reset() gets a timed start event too, and the time since the last mark before it (other work on
// the stream, a pause) is nobody's period: that step's group is timed from its start. They go to a
// DeviceSteps
// (profiler/device_steps.hpp), which by default feeds the profiler's FPS line from the GPU's
// step-end times ("GPU clock" in the line).
//
/* clang-format off */
//   simprof::cuda::StepPacer pacer(prof, stream);          // 2 steps in flight, FPS on the GPU clock
//   for (int i = 0; i < n; ++i) { auto step = prof.step(); cache.run({n_envs}, body); }
//   pacer.finish();                                         // the last steps' times, a final sample
//   pacer.device_steps().mean_period_s();                   // seconds per step on the GPU
/* clang-format on */
//
// Cost: an event record per step on the stream (and a start event every span_every) and, when the
// GPU is behind, the host waiting for it (which is the point); no kernel. A timed event costs the
// GPU a little between two steps, an untimed one nothing measurable (docs/gpu-truth.md):
// mark_every and span_every set how many steps pay it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/profiler/device_steps.hpp"
#include "simprof/profiler/listener.hpp"
#include "simprof/profiler/step_profiler.hpp"

namespace simprof::cuda {

/// How many steps a StepPacer lets run ahead, and which steps get events.
struct StepPacerOptions {
  /// Steps enqueued and not finished on the GPU, the one being enqueued included (>= 1). 2: the
  /// GPU runs one step while the host enqueues the next, so it never waits for the host in steady
  /// state; 1 serialises host and GPU (the GPU idles while the host enqueues).
  int max_in_flight = 2;
  bool fps_from_device = true;  ///< feed the profiler's FPS line from the GPU's step-end times
  /// A timed end event after every step whose index is a multiple of mark_every (and after every
  /// spanned one); the other steps end with an untimed event, which keeps the bound exact. A timed
  /// event costs the GPU a microsecond or two between two steps (docs/gpu-truth.md): with 8, the
  /// default, the steps between two timed events share their period (the mean over the group) and
  /// the FPS line is unchanged (its samples end on a timed event); 1: every step's own period, at
  /// that cost on every step.
  int mark_every = 8;
  /// Steps whose index is a multiple of span_every also get a start event, which times their span
  /// on the GPU (DeviceStep::step_s); the others have none. 0: no step is spanned.
  int span_every = 8;
};

/// What a StepPacer did so far (StepPacer::counters()).
struct StepPacerCounters {
  std::uint64_t steps = 0;           ///< steps recorded
  std::uint64_t waits = 0;           ///< steps whose start waited for the GPU
  double wait_s = 0;                 ///< host seconds spent waiting (steady clock)
  std::uint64_t most_in_flight = 0;  ///< most steps in flight seen (with the one beginning)
};

/// Bounds the steps in flight on the GPU and times each step on the device with events, feeding
/// a DeviceSteps and, by default, the profiler's FPS line (see the header comment).
class StepPacer : public StepListener {
 public:
  /// Attaches to `prof`; `stream` is the one the engine's steps end on, on the current device (the
  /// pacer's events are made there). Throws std::invalid_argument for max_in_flight or mark_every
  /// < 1, span_every < 0 or a stream of another device, CudaError when the events cannot be made.
  StepPacer(StepProfiler& prof, cudaStream_t stream, StepPacerOptions options = {});
  /// The tag of a pacer driven by its owner (a tool that paces the steps it measures).
  struct Driven {};
  /// As above, but not attached to `prof`: its owner calls on_step_begin() and on_step_end()
  /// from its own listener, before its own work.
  StepPacer(StepProfiler& prof, cudaStream_t stream, StepPacerOptions options, Driven);
  ~StepPacer() override;
  StepPacer(const StepPacer&) = delete;
  StepPacer& operator=(const StepPacer&) = delete;

  /// Waits for every step recorded so far, takes in their device times and completes the FPS
  /// sample in progress: call at the end of a run, before reading results.
  void finish();
  /// The device times of the steps taken in so far (in step order).
  const DeviceSteps& device_steps() const noexcept { return steps_; }
  /// Steps recorded and waits so far.
  const StepPacerCounters& counters() const noexcept { return counters_; }
  /// The options the pacer was made with.
  const StepPacerOptions& options() const noexcept { return options_; }
  /// The device the pacer belongs to: its stream's, current when it was made.
  int device() const noexcept { return device_; }
  /// Called with each step's device times when they are taken in, in step order (for tools that
  /// join other device readings to the step: DeviceStageTimer).
  void set_on_step(std::function<void(const DeviceStep&)> f) { on_step_ = std::move(f); }
  /// The stream the pacer's events are recorded on from now on (the one the engine's steps end
  /// on, of the pacer's device).
  void set_stream(cudaStream_t stream) noexcept { stream_ = stream; }

  void on_step_begin(std::uint64_t step, std::int64_t ticks) override;
  void on_step_end(std::uint64_t step, std::int64_t ticks, StepOutcome outcome) override;
  bool wants_worker_zones() const noexcept override { return false; }

 private:
  struct Slot {
    Event begin, end;
    Event pace{cudaEventDisableTiming};  // the end of an unmarked step: ordering only
    std::uint64_t step = 0;
    bool completed = false;
    bool spanned = false;  // the begin event was recorded
    bool marked = false;   // the end event was recorded
    bool paced = false;    // the pace event was recorded (an unmarked step)
    bool rebased = false;  // the FPS line was reset before it: its begin event starts the clock
  };
  Slot& slot(std::uint64_t seq) noexcept { return ring_[seq % ring_.size()]; }
  /// Takes in the recorded steps whose end event completed (all of them when `wait`).
  void take_in(bool wait) noexcept;
  void report(const char* call, cudaError_t e) noexcept;

  StepProfiler& prof_;
  cudaStream_t stream_;
  int device_;
  StepPacerOptions options_;
  std::vector<Slot> ring_;         // max_in_flight + mark_every + 2 steps
  std::uint64_t recorded_ = 0;     // steps ended (in the pacer's own sequence)
  std::uint64_t taken_ = 0;        // steps taken in: every step before the latest mark taken in
  std::uint64_t done_ = 0;         // steps known to have ended on the GPU (a wait, or taken in)
  bool have_mark_ = false;         // slot(taken_ - 1) holds the latest mark taken in
  bool open_ = false;              // a step began and its begin event is recorded
  std::uint64_t resets_seen_ = 0;  // the FPS tracker's resets() at the last step's begin
  DeviceSteps steps_;
  StepPacerCounters counters_;
  std::function<void(const DeviceStep&)> on_step_;
  bool reported_ = false;
  ListenerAttachment attached_;  // last: the first to go, so no call reaches a half-gone listener
};

}  // namespace simprof::cuda
