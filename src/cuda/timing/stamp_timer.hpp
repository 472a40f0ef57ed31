// SPDX-License-Identifier: MIT
// What both stamping timers are made of (DeviceStageTimer's stage stamps and GraphKernelTimer's
// node stamps are two strategies over it): the profiler they listen to, the stream and its device,
// the engine's ring (stamp_ring.hpp), their voice, which steps they sample, the capture a
// GraphCache tells them of, the guarded making of a stamped copy, and their ties to the world.
// Private to src/cuda/timing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>

#include "said_once.hpp"
#include "sample_stats.hpp"
#include "simprof/cuda/graphs/instrumentation.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "stamp_ring.hpp"

namespace simprof::cuda::detail {

// The engine's ring, as a strategy sizes it (StampRing's constructor).
struct RingShape {
  std::size_t records = 1, record_bytes = 8, readings = 1, reading_bytes = 8;
  Publish where = Publish::kOnStream;
};

class StampTimer : public StepListener {
 public:
  // Binds `stream`'s device (the current one from now) and makes the ring there.
  StampTimer(const char* name, StepProfiler& prof, cudaStream_t stream, SampleSchedule schedule,
             const RingShape& ring);
  StampTimer(const StampTimer&) = delete;
  StampTimer& operator=(const StampTimer&) = delete;
  bool wants_worker_zones() const noexcept final { return false; }

  // The hook a GraphCache calls (through StampHook). A capture begins and ends on `s`.
  virtual void capture_begins(cudaStream_t s) noexcept;
  void capture_ends() noexcept { capturing = false; }
  // The stamped copy of `graph` (stamped_copy()), or null: the graph replays without stamps, and a
  // failure is said (the first) and counted (copy_failed()).
  cudaGraph_t instrumented_copy(cudaGraph_t graph) noexcept;
  // Whether this step's launch runs the stamped copy.
  virtual bool instrumented_launch() noexcept = 0;
  virtual void copy_released(cudaGraph_t) noexcept {}

  // A failed call (`what`), said as an error: the first only, `why()` describing it only then.
  template <class Why>
  void failed_with(const char* what, Why&& why) noexcept {
    if (voice.failed_before()) return;
    try {
      voice.failed(what, why());
    } catch (...) {
    }
  }
  void failed(const char* what, cudaError_t e) noexcept {
    failed_with(what, [e] { return describe(e); });
  }

  StepProfiler& prof;
  cudaStream_t stream;
  const int device_id;  // the stream's, current when made
  const SampleSchedule schedule;
  StampRing engine;
  TimerVoice voice;
  bool capturing = false;                 // a step is being captured (GraphCache's)
  cudaStream_t capture_stream = nullptr;  // ... on this stream

 protected:
  ~StampTimer() = default;
  // The copy with the strategy's stamps (throws; null: nothing to stamp).
  virtual cudaGraph_t stamped_copy(cudaGraph_t graph) = 0;
  virtual void copy_failed() noexcept {}
};

// GraphCache's view of a stamping timer, held weakly there; a user may keep it (instrumentation()
// hands out a shared_ptr): the timer's destructor detaches it, and a detached hook adds nothing.
class StampHook final : public GraphInstrumentation {
 public:
  explicit StampHook(StampTimer* t) : timer_(t) {}
  void detach() noexcept { timer_ = nullptr; }
  void capture_begins(cudaStream_t s) noexcept override {
    if (timer_) timer_->capture_begins(s);
  }
  void capture_ends() noexcept override {
    if (timer_) timer_->capture_ends();
  }
  cudaGraph_t instrumented_copy(cudaGraph_t graph) noexcept override {
    return timer_ ? timer_->instrumented_copy(graph) : nullptr;
  }
  bool instrumented_launch() const noexcept override {
    return timer_ && timer_->instrumented_launch();
  }
  void copy_released(cudaGraph_t copy) noexcept override {
    if (timer_) timer_->copy_released(copy);
  }

 private:
  StampTimer* timer_;
};

// A stamping timer's ties to the world, its last member: the hook a GraphCache holds and the
// profiler's attachment, made last (nothing can throw once the profiler calls the timer) and undone
// first: the hook detached (a cache that still holds it launches the plain graph from then on), the
// timer detached from the profiler, then the timer's stream (as it is then) drained: its stamps may
// be in flight; errors are not thrown there.
class TimerTies {
 public:
  explicit TimerTies(StampTimer& timer)
      : timer_(timer),
        hook_(std::make_shared<StampHook>(&timer)),
        attached_(timer.prof.attach(timer)) {}
  ~TimerTies() {
    hook_->detach();
    attached_.detach();
    cudaStreamSynchronize(timer_.stream);
  }
  TimerTies(const TimerTies&) = delete;
  TimerTies& operator=(const TimerTies&) = delete;
  std::shared_ptr<GraphInstrumentation> hook() const noexcept { return hook_; }

 private:
  StampTimer& timer_;
  std::shared_ptr<StampHook> hook_;
  ListenerAttachment attached_;
};

}  // namespace simprof::cuda::detail
