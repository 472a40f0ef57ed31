// SPDX-License-Identifier: MIT
// DeviceStageTimer: device-side stage times next to the host ones, on the GPU's global timer.
//
// Attached to a StepProfiler, it stamps every stage boundary of one step in `sample_every` (16 by
// default): in a captured graph (a GraphCache given instrumentation()) as a leaf stamp node of a
// stamped copy launched on sampled steps only, and in an eager step as a one-thread kernel on the
// stream after the work before it. A stage's device time runs from the end of the device work
// before its first boundary to the end of its last kernel, summed over its scopes in the step,
// children counted into their parents as on the host. It paces the loop too (a StepPacer, unless
// max_in_flight is 0): "step" and "period" from CUDA events, and no reading is overwritten.
// How it works and what it costs: docs/gpu-truth.md ("Device stage times").
//
/* clang-format off */
//   simprof::cuda::DeviceStageTimer dev(prof, stream);
//   simprof::cuda::GraphCache cache(stream, {}, dev.instrumentation());  // or cache.attach(...)
//   for (int i = 0; i < n; ++i) { auto step = prof.step(); cache.run({n_envs}, body); }
//   dev.synchronize();
//   dev.mean("physics");   // seconds on the GPU over the sampled steps; same names as on the host
/* clang-format on */
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "simprof/cuda/timing/stamp_cost.hpp"
#include "simprof/cuda/timing/step_pacer.hpp"
#include "simprof/profiler/report.hpp"
#include "simprof/profiler/run_record.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/profiler/timings.hpp"

namespace simprof::cuda {

class GraphInstrumentation;

/// How a DeviceStageTimer samples, and whether it paces the loop.
struct DeviceStageTimerOptions {
  /// Step records kept (>= max_in_flight + 4, >= 2 unpaced, <= 2^20), rounded up to a power of two.
  std::size_t ring = 64;
  /// Steps whose index is a multiple of this are stamped (>= 1; 1: every step, at the stamps' full
  /// cost on every step).
  int sample_every = 16;
  /// Pacing: steps the GPU may hold queued (a StepPacer); 0 leaves the loop unbounded.
  int max_in_flight = 2;
  bool fps_from_device = true;  ///< with pacing: the FPS line reads the GPU's step-end times
  /// Eager steps: a boundary that comes within this many nanoseconds (the host's steady clock) of
  /// the previous eager stamp's launch shares that stamp's instant instead of launching its own —
  /// no kernel launch fits in that time on the host, so the GPU reached both boundaries at once. A
  /// stage's begin right after its parent's, or an end right before the next begin, then costs no
  /// stamp (500 halves the demo engine's). Off (0) by default: a cudaStreamWaitEvent or an event
  /// record returns sooner, and a stage holding only such a wait would read 0 with the wait counted
  /// into the next stage.
  int merge_within_ns = 0;
};

/// Device-side stage times of a StepProfiler's steps (see the header comment).
class DeviceStageTimer {
 public:
  static constexpr int kMaxStamps = 126;  ///< stage boundaries recorded per step; more are counted
  /// The readings samples() keeps per stage: the latest, as many as a run record writes.
  static constexpr std::size_t kSampleHistory = kRunRecordSamples;

  /// Attaches to `prof`; `stream` is the one the engine's steps run on. Throws
  /// std::invalid_argument for a ring smaller than max_in_flight + 4 (2 unpaced) or over 2^20,
  /// sample_every < 1, max_in_flight < 0 or merge_within_ns < 0.
  DeviceStageTimer(StepProfiler& prof, cudaStream_t stream, DeviceStageTimerOptions options = {});
  ~DeviceStageTimer();
  DeviceStageTimer(const DeviceStageTimer&) = delete;
  DeviceStageTimer& operator=(const DeviceStageTimer&) = delete;

  /// What a GraphCache on the timer's stream needs to put the timer's stamps into the steps it
  /// captures: pass it to the cache's constructor or to GraphCache::attach(). The cache holds it
  /// weakly, so the timer and the cache may be made and destroyed in either order.
  std::shared_ptr<GraphInstrumentation> instrumentation() const noexcept;
  /// Device seconds per stage of the latest sampled step whose readings are in ("step" is the
  /// step's span on the GPU, "period" the time since the previous step ended: paced, the mean over
  /// the pacer's group of steps that ends at this one). Empty until one is.
  const TimingsSnapshot& device_timings() const noexcept;
  /// Joins every step whose readings are in, without waiting. Called at every step end.
  void poll() noexcept;
  /// Waits for the GPU, then joins everything (and completes the FPS sample in progress).
  void synchronize();
  /// Mean device seconds of `stage` over the sampled steps that ran it (NaN when none did). For
  /// kStepStage and kPeriodStage when pacing: over the steps that were not stamped and, for the
  /// period, whose group holds no stamped step (the loop as it runs without the timer; every step
  /// when sample_every is 1).
  double mean(StageId stage) const noexcept;
  /// mean() by stage name ("physics", "step", "period"); NaN for a name the profiler never saw.
  double mean(std::string_view stage) const noexcept;
  /// Mean device seconds of `stage` over the sampled (stamped) steps, "step" and "period" included:
  /// the denominator of a stage's share of its step.
  double sampled_mean(StageId stage) const noexcept;
  /// sampled_mean() by stage name.
  double sampled_mean(std::string_view stage) const noexcept;
  /// The readings behind mean(`stage`), oldest first, in seconds: the latest kSampleHistory (the
  /// per-step samples a run record keeps, so `simprof compare` can test device stages too). The
  /// pacer's "period" gives one per group of steps that share a measured period.
  std::vector<double> samples(StageId stage) const;
  /// samples() by stage name (empty for a name the profiler never saw).
  std::vector<double> samples(std::string_view stage) const;
  /// Sampled steps joined.
  std::uint64_t joined() const noexcept;
  /// Sampled steps whose readings were lost (overwritten before the host read them, more than
  /// kMaxStamps boundaries, or a failed stamp). Nothing is lost silently.
  std::uint64_t dropped() const noexcept;
  /// Stage readings left out because the stage's stamps ran out of order (said once, when first).
  std::uint64_t unpaired() const noexcept;
  /// Completed sampled steps that ran neither a stage boundary nor a stamped graph while earlier
  /// steps had stages: a graph replayed without the timer's stamps (a GraphCache not given
  /// instrumentation(), or another tool's copy ran), or a step without stages; said once with the
  /// fix. Such steps are in no mean. A GpuProfile's caches on its stream are always wired.
  std::uint64_t unstamped() const noexcept;
  /// How many steps mean(`stage`) is over (0: none, and mean() is NaN).
  std::uint64_t count(StageId stage) const noexcept;
  /// count() by stage name.
  std::uint64_t count(std::string_view stage) const noexcept;
  /// Eager boundaries that shared an earlier eager stamp's instant (merge_within_ns) instead of
  /// launching their own.
  std::uint64_t merged() const noexcept;
  /// What one eager stamp adds to a stage it sits in, in seconds, in this timer's launch mode:
  /// measured once per device (kernels queued back to back with and without two stamps between
  /// each) and taken out of every eager reading; device_stage_table() says it.
  double eager_stamp_seconds() const noexcept;
  /// The stamp costs measured on the timer's device (stamp_cost.hpp).
  StampCost stamp_cost() const;
  /// The options the timer was made with (the ring rounded up to a power of two).
  const DeviceStageTimerOptions& options() const noexcept;
  /// The device the timer belongs to: its stream's, current when it was made.
  int device() const noexcept;
  /// The pacer, when pacing (max_in_flight > 0).
  const StepPacer* pacer() const noexcept;
  /// The stream stamps go to (the one the engine's step runs on; a GraphCache given the timer's
  /// instrumentation() must capture on it).
  void set_stream(cudaStream_t stream) noexcept;

 private:
  struct Impl;  // src/cuda/timing/stage_timer_impl.hpp
  std::unique_ptr<Impl> impl_;
};

/// One row of device_stage_table(): a stage the device timed.
struct DeviceStageRow {
  /// The stage's id in the profiler.
  StageId id = kNoStage;
  /// The stage's name.
  std::string name;
  /// Nesting depth: 0 for a top-level stage, 1 for a stage inside it, ...
  int depth = 0;
  double host_mean_s = std::numeric_limits<double>::quiet_NaN();  ///< NaN: no host statistics
  /// Mean seconds of the stage on the device over the sampled steps.
  double device_mean_s = 0;
  /// Percent of the mean sampled step (sampled_mean("step")); 0 for "period", not a part of it.
  double device_share = 0;
  /// The readings behind device_mean_s (DeviceStageTimer::samples()).
  std::vector<double> samples;
};
/// The stages `dev` timed, in the profiler's stage order, with the host means where the profiler
/// keeps statistics: the rows of device_stage_table().
std::vector<DeviceStageRow> device_stage_rows(const StepProfiler& prof,
                                              const DeviceStageTimer& dev);

/// device_stage_rows() as a run record's rows (RunRecordInfo::device_stages): each with the
/// statistics of its samples, its device share and its samples:
///   info.device_stages = simprof::cuda::device_record_rows(prof, dev);
///   simprof::write_run_record(prof, "run.json", info);
std::vector<StageRow> device_record_rows(const StepProfiler& prof, const DeviceStageTimer& dev);

/// Host and device stage times side by side: stage, host mean, device mean, the median of its
/// latest samples (one stalled step moves only the mean), device share of the device step. Host
/// means need stats_window > 0 on the profiler (blank otherwise).
std::string device_stage_table(const StepProfiler& prof, const DeviceStageTimer& dev);

}  // namespace simprof::cuda
