// SPDX-License-Identifier: MIT
// DeviceStageTimer: device-side stage times next to the host ones, at about 1 % of the step.
//
// On a GPU backend a host stage scope measures how long the host took to enqueue the stage's
// kernels. Attached to a StepProfiler, a DeviceStageTimer takes the GPU's global timer at every
// stage boundary of one step in `sample_every` (16 by default), and of no other:
//   * in a step being captured into a graph (GraphCache), each boundary becomes a one-thread stamp
//     kernel added to the graph as a leaf: it depends on the work captured before the boundary, and
//     nothing waits for it. Boundaries with no work between them share one stamp. GraphCache keeps
//     two executables (instrumentation.hpp): the stamped one, launched on sampled steps, and
//     the graph without stamps, launched on every other step — which therefore runs exactly as it
//     would without the timer;
//   * in a sampled eager step, a stamp kernel is enqueued on the stream at each boundary.
// A sampled step's readings are copied to page-locked host memory by a kernel on a stream of the
// timer's own after the step ends, and joined to the host's step by its index.
//
// It paces the loop too (a StepPacer, unless max_in_flight is 0): "period" is the time between
// consecutive steps' ends and "step" a step's span, from CUDA events, and no reading is ever
// overwritten. Without pacing, a GPU a full ring behind leaves steps untimed (counted).
//
/* clang-format off */
//   simprof::cuda::DeviceStageTimer dev(prof, stream);     // before the cache: it outlives its graphs
//   for (int i = 0; i < n; ++i) { auto step = prof.step(); cache.run({n_envs}, body); }
//   dev.synchronize();
//   dev.mean("physics");   // seconds on the GPU over the sampled steps; same names as on the host
/* clang-format on */
//
// What a stage's device time is: from the end of the device work before its first boundary to the
// end of its last kernel — its kernels' span plus the launch gap before the first one — summed over
// the stage's scopes in the step, children counted into their parents as on the host. Stamps cost
// the sampled step about a microsecond per boundary; the unsampled steps, nothing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/step_pacer.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/profiler/timings.hpp"

namespace simprof::cuda {

namespace detail {
struct StepRecord;
struct CaptureStamps;
}  // namespace detail

struct DeviceStageTimerOptions {
  std::size_t ring = 64;  ///< step records kept (>= max_in_flight + 4; >= 2 unpaced)
  /// Steps whose index is a multiple of this are stamped (>= 1; 1: every step, at the stamps' full
  /// cost on every step).
  int sample_every = 16;
  /// Pacing: steps the GPU may hold queued (a StepPacer); 0 leaves the loop unbounded.
  int max_in_flight = 2;
  bool fps_from_device = true;  ///< with pacing: the FPS line reads the GPU's step-end times
};

class DeviceStageTimer : public StepListener {
 public:
  static constexpr int kMaxStamps = 126;  ///< stage boundaries recorded per step; more are counted

  /// Attaches to `prof`; `stream` is the one the engine's steps run on. Throws
  /// std::invalid_argument for a ring smaller than max_in_flight + 4 (2 unpaced), or sample_every
  /// < 1.
  DeviceStageTimer(StepProfiler& prof, cudaStream_t stream, DeviceStageTimerOptions options = {});
  ~DeviceStageTimer() override;
  DeviceStageTimer(const DeviceStageTimer&) = delete;
  DeviceStageTimer& operator=(const DeviceStageTimer&) = delete;

  /// Device seconds per stage of the latest sampled step whose readings are in ("step" is the
  /// step's span on the GPU, "period" the time since the previous step ended). Empty until one is.
  const TimingsSnapshot& device_timings() const noexcept { return latest_; }
  /// Joins every step whose readings are in, without waiting. Called at every step end.
  void poll() noexcept;
  /// Waits for the GPU, then joins everything (and completes the FPS sample in progress).
  void synchronize();
  /// Mean device seconds of `stage` over the sampled steps that ran it (NaN when none did). For
  /// "step" and "period" when pacing: over the steps that were not stamped (the loop as it runs
  /// without the timer; every step when sample_every is 1).
  double mean(std::string_view stage) const;
  /// Mean device seconds of `stage` over the sampled (stamped) steps, "step" and "period" included:
  /// the denominator of a stage's share of its step.
  double sampled_mean(std::string_view stage) const;
  /// Sampled steps joined, and sampled steps whose readings were lost (overwritten before the host
  /// read them, more than kMaxStamps boundaries, or a failed stamp). Nothing is lost silently.
  std::uint64_t joined() const noexcept { return joined_; }
  std::uint64_t dropped() const noexcept { return dropped_; }
  /// Stage readings left out because the stage's stamps ran out of order (said once, when first).
  std::uint64_t unpaired() const noexcept { return unpaired_; }
  const DeviceStageTimerOptions& options() const noexcept { return options_; }
  /// The device the timer belongs to: its stream's, current when it was made.
  int device() const noexcept { return device_id_; }
  /// The pacer, when pacing (max_in_flight > 0).
  const StepPacer* pacer() const noexcept { return pacer_ ? &*pacer_ : nullptr; }
  /// The stream stamps go to (the one the engine's step runs on).
  void set_stream(cudaStream_t stream) noexcept;

  void on_step_begin(std::uint64_t step, std::int64_t ticks) override;
  void on_stage_begin(StageId id, std::int64_t ticks) override;
  void on_stage_end(StageId id, std::int64_t ticks) override;
  void on_step_end(std::uint64_t step, std::int64_t ticks, StepOutcome outcome) override;

 private:
  void boundary(StageId stage, int kind) noexcept;
  void join(const detail::StepRecord& r, std::uint64_t step);
  void unpaired(StageId id, std::uint64_t step);
  void device_step(const DeviceStep& d);
  cudaGraph_t instrumented_copy(cudaGraph_t graph) noexcept;
  void calibrate();
  void report(const char* what, cudaError_t e) noexcept;
  void report(const char* what, const std::string& why) noexcept;
  class Hook;

  StepProfiler& prof_;
  cudaStream_t stream_;
  int device_id_;  // the current device when made: the stream's (bind_device)
  DeviceStageTimerOptions options_;
  std::optional<StepPacer> pacer_;  // made first: its listener runs before this one
  Stream side_;                     // publishes each step's record, off the step's path
  Event step_done_{cudaEventDisableTiming};
  PinnedBuffer<detail::StepRecord> mirror_;    // page-locked, mapped: the published records
  detail::StepRecord* mirror_view_ = nullptr;  // mirror_ as the device sees it
  DeviceBuffer<detail::StepRecord> records_;   // where stamps are written
  DeviceBuffer<unsigned> step_index_;  // the step in progress, written by the stream at its start
  std::unique_ptr<detail::CaptureStamps> capture_;  // stamp nodes of the capture in progress
  std::shared_ptr<Hook> hook_;   // GraphCache's view of this timer (instrumentation.hpp)
  std::uint64_t ended_ = 0;      // steps ended on the host (the latest index + 1)
  std::uint64_t next_read_ = 0;  // steps joined or passed over
  bool began_eagerly_ = false;   // the step in progress has an eager begin stamp
  bool skip_ = false;            // this step is not stamped (not sampled, or the ring was full)
  bool capturing_ = false;       // GraphCache is capturing a step on the stream
  double eager_stamp_ns_ = 0;    // what one eager stamp adds to a stage around it (calibrate())
  std::vector<std::uint8_t> stamped_;     // by step % ring: the step is stamped
  std::vector<std::uint64_t> published_;  // by step % ring: step + 1 of the publication enqueued
  std::vector<std::uint8_t> eager_;       // by step % ring: its stamps ran on the stream
  std::vector<std::uint8_t> completed_;   // by step % ring: the host's outcome
  std::vector<DeviceStep> device_;        // the pacer's times of steps not yet joined
  std::vector<std::uint8_t> have_device_;
  std::vector<unsigned> order_;  // scratch for join(): entries in time order
  TimingsSnapshot latest_;
  TimingsSnapshot scratch_;
  std::vector<double> sums_;
  std::vector<std::uint64_t> counts_;
  double loop_sum_[2] = {0, 0};  // step, period of the unstamped steps (from the pacer)
  std::uint64_t loop_count_[2] = {0, 0};
  std::vector<std::int64_t> open_at_;
  std::vector<unsigned> open_idx_;
  std::vector<std::uint8_t> open_;
  std::uint64_t prev_step_ = 0;
  std::uint64_t prev_begin_ns_ = 0;
  bool have_prev_ = false;
  std::uint64_t joined_ = 0, dropped_ = 0, unpaired_ = 0;
  bool reported_ = false;
};

/// One row of device_stage_table(): a stage the device timed.
struct DeviceStageRow {
  StageId id = kNoStage;
  std::string name;
  int depth = 0;
  double host_mean_s = std::numeric_limits<double>::quiet_NaN();  ///< NaN: no host statistics
  double device_mean_s = 0;
  double device_share = 0;  ///< percent of the mean sampled step (sampled_mean("step"))
};
std::vector<DeviceStageRow> device_stage_rows(const StepProfiler& prof,
                                              const DeviceStageTimer& dev);

/// Host and device stage times side by side: stage, host mean, device mean, device share of the
/// device step. Host means need stats_window > 0 on the profiler (blank otherwise).
std::string device_stage_table(const StepProfiler& prof, const DeviceStageTimer& dev);

}  // namespace simprof::cuda
