// SPDX-License-Identifier: MIT
// DeviceStageTimer: device-side stage times next to the host ones.
//
// On a GPU backend a host stage scope measures how long the host took to enqueue the stage's
// kernels. Attached to a StepProfiler, a DeviceStageTimer enqueues a one-thread timestamp kernel on
// the engine's stream at every step and stage boundary; each writes the GPU's global timer into
// device memory, and the step's end copies the finished record into page-locked host memory once.
// When a step is captured into a graph (GraphCache), the timestamp kernels
// inside it are captured too, so the readings are taken again at every replay. The host joins the
// readings to the step that produced them when it finds them complete (at each step end, or in
// poll()): it never waits for the GPU unless synchronize() is called.
//
/* clang-format off */
//   simprof::cuda::DeviceStageTimer dev(prof, stream);
//   for (;;) { auto step = prof.step(); engine.enqueue_step(stream); }
//   dev.synchronize();
//   dev.device_timings().at("physics");   // seconds on the GPU; same keys as prof.timings()
/* clang-format on */
//
// Cost: one tiny kernel per boundary (in a replayed graph about 1.5 us of device time each on an
// H200; eagerly one launch of host time each). A stage's device time includes one timestamp
// kernel. Off unless attached.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "simprof/cuda/buffer.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/profiler/timings.hpp"

namespace simprof::cuda {

namespace detail {
struct StepRecord;
}

class DeviceStageTimer : public StepListener {
 public:
  static constexpr int kMaxStamps = 126;  ///< stage boundaries recorded per step; more are counted

  /// Attaches to `prof`. `in_flight` bounds the steps the GPU may run ahead of the host's polling
  /// before the oldest readings are overwritten (counted in dropped()).
  DeviceStageTimer(StepProfiler& prof, cudaStream_t stream, std::size_t in_flight = 64);
  ~DeviceStageTimer() override;
  DeviceStageTimer(const DeviceStageTimer&) = delete;
  DeviceStageTimer& operator=(const DeviceStageTimer&) = delete;

  /// Device seconds per stage of the latest step whose device work has completed and been joined
  /// ("step" is the step's span on the GPU). Empty until one has.
  const TimingsSnapshot& device_timings() const noexcept { return latest_; }
  /// Joins every completed step without waiting. Called at every step end.
  void poll() noexcept;
  /// Waits for the stream, then joins everything.
  void synchronize();
  /// Mean device seconds of `stage` over every joined step that ran it (NaN when none did).
  double mean(std::string_view stage) const;
  /// Steps joined, and steps whose readings were lost (overwritten before the host read them, or
  /// more than kMaxStamps boundaries). Nothing is lost silently.
  std::uint64_t joined() const noexcept { return joined_; }
  std::uint64_t dropped() const noexcept { return dropped_; }
  /// The stream timestamps go to (the one the engine's step is enqueued on).
  void set_stream(cudaStream_t stream) noexcept { stream_ = stream; }

  void on_step_begin(std::uint64_t step, std::int64_t ticks) override;
  void on_stage_begin(StageId id, std::int64_t ticks) override;
  void on_stage_end(StageId id, std::int64_t ticks) override;
  void on_step_end(std::uint64_t step, std::int64_t ticks, StepOutcome outcome) override;

 private:
  void stamp(int op, StageId stage) noexcept;
  void join(const detail::StepRecord& r, std::uint64_t step, bool completed);

  StepProfiler& prof_;
  cudaStream_t stream_;
  std::size_t ring_;
  PinnedBuffer<detail::StepRecord> host_records_;  // page-locked, mapped, written by the device
  detail::StepRecord* host_view_ = nullptr;        // host_records_ as the device sees it
  DeviceBuffer<detail::StepRecord> dev_records_;   // where stamps are written (device memory)
  DeviceBuffer<unsigned long long> dev_seq_;       // device-side step counter
  std::uint64_t launched_ = 0;                     // step records the host has launched
  std::uint64_t next_read_ = 0;
  std::vector<std::uint64_t> host_step_;  // step index of each in-flight record
  std::vector<std::uint8_t> completed_;   // host outcome of each in-flight record
  TimingsSnapshot latest_;
  TimingsSnapshot scratch_;
  std::vector<double> sums_;
  std::vector<std::uint64_t> counts_;
  std::vector<std::int64_t> open_at_;
  std::vector<std::uint8_t> open_;
  std::uint64_t prev_begin_ns_ = 0;
  std::uint64_t prev_seq_ = 0;
  std::uint64_t joined_ = 0, dropped_ = 0;
  bool reported_ = false;
  bool skip_ = false;  // this step is not timed (the ring was full)
};

/// Host and device stage times side by side: stage, host mean, device mean, device share of the
/// device step. Host means need stats_window > 0 on the profiler (blank otherwise).
std::string device_stage_table(const StepProfiler& prof, const DeviceStageTimer& dev);

}  // namespace simprof::cuda
