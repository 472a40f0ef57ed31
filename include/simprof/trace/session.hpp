// SPDX-License-Identifier: MIT
// TraceSession: records the CPU stages of the steps a Schedule selects, gathers the events of any
// attached TraceSource (the CUDA backend's KernelTracer: every kernel through CUPTI) in the same
// timebase, and hands over one Trace per active window — by default written to a file.
//
//   simprof::TraceSession trace(prof, {.schedule = {80, 3, 1, 1}, .dir = "traces"});
//   simprof::cuda::KernelTracer kernels(prof);  trace.add_source(&kernels);
//   for (...) { auto step = prof.step(); ... }   // traces/simprof_trace_0.json after step 84
//
// The hot path (stage begin/end while recording) stores two ticks into a preallocated array; names
// and JSON come later. Events beyond max_cpu_events are dropped and counted, and the count is
// written into the trace and logged: nothing is lost silently.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "simprof/trace/schedule.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/trace/chrome_json.hpp"

namespace simprof {

/// A producer of trace events for the active windows, e.g. the CUPTI kernel tracer.
class TraceSource {
 public:
  virtual ~TraceSource() = default;
  /// Begin collecting (a warm-up or active window starts).
  virtual void start() = 0;
  /// Drop what was collected so far (the warm-up ends).
  virtual void discard() = 0;
  /// Stop, and append the window's events (timestamps in the session's ns timebase); return how
  /// many were lost.
  virtual std::uint64_t stop_and_collect(std::vector<TraceEvent>& out) = 0;
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

  /// Sources are not owned and must outlive the session.
  void add_source(TraceSource* source);
  /// Replaces the default handler, which writes dir/prefix_<window>.json.
  void on_trace_ready(ReadyFn fn) { ready_ = std::move(fn); }

  std::uint64_t windows() const noexcept { return windows_; }
  std::uint64_t dropped() const noexcept { return dropped_total_; }
  const std::vector<std::string>& files() const noexcept { return files_; }
  /// The action of the step in progress (or of the next step between steps).
  ScheduleAction action() const noexcept { return action_; }
  /// Nanoseconds of the session's timebase for profiler ticks (what sources must use too).
  std::int64_t to_ns(std::int64_t ticks) const noexcept;

  void on_step_begin(std::uint64_t step, std::int64_t ticks) override;
  void on_stage_begin(StageId id, std::int64_t ticks) override;
  void on_stage_end(StageId id, std::int64_t ticks) override;
  void on_step_end(std::uint64_t step, std::int64_t ticks, StepOutcome outcome) override;

 private:
  struct Span {
    StageId id;  // kStepStage for the step itself
    std::uint64_t step;
    std::int64_t begin, end;
  };
  void save(std::int64_t end_ticks);

  StepProfiler& prof_;
  TraceOptions options_;
  std::vector<TraceSource*> sources_;
  ReadyFn ready_;
  std::int64_t index_ = 0;  // schedule steps seen
  ScheduleAction action_ = ScheduleAction::kNone;
  bool sources_running_ = false;
  std::vector<Span> spans_;         // preallocated
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
