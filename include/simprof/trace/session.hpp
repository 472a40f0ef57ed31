// SPDX-License-Identifier: MIT
// TraceSession: records the CPU stages of the steps a Schedule selects, gathers the spans of any
// attached TraceSource (the CUDA backend's KernelTracer: every kernel through CUPTI) on its one
// TimeBase, and hands over one Trace per active window — by default written to a file.
//
/* clang-format off */
//   simprof::TraceOptions topt;
//   topt.schedule = {/*wait=*/80, /*warmup=*/3, /*active=*/1, /*repeat=*/1};
//   topt.dir = "traces";
//   simprof::TraceSession trace(prof, topt);
//   simprof::cuda::KernelTracer kernels(prof);  trace.add_source(&kernels);
//   for (int i = 0; i < 100; ++i) { auto step = prof.step(); /* ... */ }  // traces/simprof_trace_0.json
/* clang-format on */
//
// The hot path (stage begin/end while recording) stores two ticks into a preallocated array; names
// and JSON come later. Spans beyond max_cpu_events are dropped and counted, and the count is
// written into the trace and logged: nothing is lost silently.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "simprof/profiler/step_profiler.hpp"
#include "simprof/trace/schedule.hpp"
#include "simprof/trace/span.hpp"
#include "simprof/trace/time_base.hpp"

namespace simprof {

/// A producer of typed spans for the active windows, e.g. the CUPTI kernel tracer.
class TraceSource {
 public:
  virtual ~TraceSource() = default;
  /// The session's timebase, handed over once by TraceSession::add_source() before any window:
  /// every span the source produces is in its nanoseconds.
  virtual void bind(const TimeBase& time_base) = 0;
  /// Begin collecting (a warm-up or active window starts).
  virtual void start() = 0;
  /// Drop what was collected so far (the warm-up ends).
  virtual void discard() = 0;
  /// Stop, and append the window's spans; return how many were lost.
  virtual std::uint64_t stop_and_collect(std::vector<Span>& out) = 0;
};

struct TraceOptions {
  Schedule schedule;
  std::string dir = ".";
  std::string prefix = "simprof_trace";
  std::size_t max_cpu_events = std::size_t{1} << 16;
};

class TraceSession : public StepListener {
 public:
  using ReadyFn = std::function<void(const Trace& trace, std::uint64_t window)>;

  /// Attaches to `prof` (validates the schedule).
  TraceSession(StepProfiler& prof, TraceOptions options = {});
  ~TraceSession() override;
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;

  /// Binds `source` to this session's timebase. Sources are not owned and must outlive the
  /// session.
  void add_source(TraceSource* source);
  /// Replaces the default handler, which writes dir/prefix_<window>.json.
  void on_trace_ready(ReadyFn fn) { ready_ = std::move(fn); }

  std::uint64_t windows() const noexcept { return windows_; }
  std::uint64_t dropped() const noexcept { return dropped_total_; }
  const std::vector<std::string>& files() const noexcept { return files_; }
  /// The action of the step in progress (or of the next step between steps).
  ScheduleAction action() const noexcept { return action_; }
  /// The timebase of every span in this session's traces (built from the profiler's clock).
  const TimeBase& time_base() const noexcept { return time_base_; }
  /// Nanoseconds of the session's timebase for profiler ticks.
  std::int64_t to_ns(std::int64_t ticks) const noexcept { return time_base_.to_ns(ticks); }

  void on_step_begin(std::uint64_t step, std::int64_t ticks) override;
  void on_stage_begin(StageId id, std::int64_t ticks) override;
  void on_stage_end(StageId id, std::int64_t ticks) override;
  void on_step_end(std::uint64_t step, std::int64_t ticks, StepOutcome outcome) override;

 private:
  struct Recorded {
    StageId id;  // kStepStage for the step itself
    std::uint64_t step;
    std::int64_t begin, end;
  };
  void save();

  StepProfiler& prof_;
  TraceOptions options_;
  TimeBase time_base_;
  std::vector<TraceSource*> sources_;
  ReadyFn ready_;
  std::int64_t index_ = 0;  // schedule steps seen
  ScheduleAction action_ = ScheduleAction::kNone;
  bool sources_running_ = false;
  std::vector<Recorded> recorded_;  // preallocated
  std::vector<std::int64_t> open_;  // begin ticks of open stages, by id
  std::int64_t step_begin_ = 0;
  std::uint64_t dropped_ = 0, dropped_total_ = 0;
  std::uint64_t fps_samples_seen_ = 0;
  std::vector<std::pair<std::int64_t, double>> fps_;  // (ticks, total fps) in the window
  std::uint64_t windows_ = 0;
  std::vector<std::string> files_;
  std::int64_t pid_, tid_;
};

}  // namespace simprof
