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
//   simprof::cuda::KernelTracer kernels(prof);
//   auto joined = trace.add_source(&kernels);  // leaves the session when it goes (first)
//   for (int i = 0; i < 100; ++i) { auto step = prof.step(); /* ... */ }
//   // traces/simprof_trace_0/rank0.json: one directory per window, one file per rank
/* clang-format on */
//
// Many processes (one per GPU): each writes dir/<prefix>_<window>/rank<R>.json, R from the
// launcher's environment (RankInfo::from_env) or TraceOptions::ranks. Every file carries Kineto's
// header (schemaVersion, deviceProperties, distributedInfo with the rank, baseTimeNanoseconds),
// span times are wall-clock time anchored at each window's start, and steps are named
// ProfilerStep#N after the profiler's own step number — the same N on every rank — so Holistic
// Trace Analysis reads the window's directory as one run and Perfetto lines the files up.
//
// The hot path (stage begin/end while recording) stores two ticks into a preallocated array; names
// and JSON come later. With TraceOptions::background the loop pays, at a window's end, only for
// marking where its sources stop (the CUDA tracer: the window's last launch); collecting,
// converting and writing run on a thread of the session's own while the loop goes on. Spans beyond
// max_cpu_events are dropped and counted, and the count is written into the trace and logged:
// nothing is lost silently.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "simprof/profiler/collective.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/trace/schedule.hpp"
#include "simprof/trace/span.hpp"
#include "simprof/trace/time_base.hpp"

namespace simprof {

class TraceSession;
class SourceRegistration;

/// A producer of typed spans for the active windows, e.g. the CUPTI kernel tracer.
class TraceSource {
 public:
  TraceSource() = default;
  /// A copy belongs to no session.
  TraceSource(const TraceSource&) noexcept {}
  /// Assigning keeps this source's own session membership (the other's is not copied).
  TraceSource& operator=(const TraceSource&) noexcept { return *this; }
  /// Leaves its session if its SourceRegistration has not, and ends that registration. (Declare
  /// the registration after the source, so that it goes first: with TraceOptions::background a
  /// window may be read on the session's thread, and only the registration's wait comes before
  /// the source's own members go.)
  virtual ~TraceSource();
  /// The session's timebase, handed over once by TraceSession::add_source() before any window:
  /// every span the source produces is in its nanoseconds.
  virtual void bind(const TimeBase& time_base) = 0;
  /// Begin collecting (a warm-up or active window starts).
  virtual void start() = 0;
  /// Drop what was collected so far (the warm-up ends).
  virtual void discard() = 0;
  /// The window's last step ended: mark where the window's work ends (the CUDA tracer: its last
  /// launch; work launched later is left out when collected). Called on the loop's thread, cheap;
  /// stop_and_collect() follows, on the same thread or (TraceOptions::background) on the
  /// session's writer thread, before the next start().
  virtual void stop() {}
  /// Stop (where stop() did not), and append the window's spans; return how many were lost.
  virtual std::uint64_t stop_and_collect(std::vector<Span>& out) = 0;
  /// Adds what the source knows to the trace's header (the CUDA tracer: deviceProperties and the
  /// CUDA versions). Called after stop_and_collect(), on the same thread.
  virtual void describe(Trace& /*trace*/) const {}
  /// The window the source is in will never be collected: its session ends inside it, or the
  /// source leaves the session (its registration reset) while it runs. Stop what start() began
  /// and drop what was gathered. On the loop's thread.
  virtual void abandon() noexcept {}

 private:
  friend class TraceSession;
  friend class SourceRegistration;
  // Waits for a window of its session still being handed over (it may read this source), then
  // leaves the session.
  void leave_session() noexcept;
  TraceSession* session_ = nullptr;
  SourceRegistration* registration_ = nullptr;  // the registration holding this source, if any
};

/// What TraceSession::add_source() returns: the source's membership of the session, owned. Its
/// destructor (or reset()) waits for a window being handed over beside the loop (it may be reading
/// the source) and takes the source out of the session, before the source itself goes: declared
/// after the source, it leaves first, so no source, ours or a user's, needs a destructor of its own
/// to be safe. A session that goes first lets its sources go; their registrations then do nothing.
class SourceRegistration {
 public:
  SourceRegistration() = default;
  /// Leaves the session (reset()).
  ~SourceRegistration() { reset(); }
  /// Takes over `other`'s membership; `other` is left empty.
  SourceRegistration(SourceRegistration&& other) noexcept;
  /// Leaves the session of the membership held (reset()), then takes over `other`'s.
  SourceRegistration& operator=(SourceRegistration&& other) noexcept;
  SourceRegistration(const SourceRegistration&) = delete;
  SourceRegistration& operator=(const SourceRegistration&) = delete;
  /// Takes the source out of its session now (a no-op when it left already, or is gone).
  void reset() noexcept;
  /// Whether the source is still in a session (false after reset(), once the session is gone, or
  /// once the source is).
  bool active() const noexcept { return source_ != nullptr && source_->session_ != nullptr; }

 private:
  friend class TraceSession;
  friend class TraceSource;  // a source that goes first ends its registration
  explicit SourceRegistration(TraceSource* source) noexcept;
  TraceSource* source_ = nullptr;
};

/// Subtracted from wall-clock span times when a trace is written ("baseTimeNanoseconds": Kineto's
/// field): 2026-01-01T00:00:00Z. One constant for every process, so files written by different
/// ranks (or hosts whose clocks agree) share their ts origin; and small enough that a reader's
/// double keeps nanoseconds for years.
inline constexpr std::int64_t kTraceBaseTimeNs = 1'767'225'600'000'000'000;

/// How a TraceSession records: its schedule of windows, where the files go, and its limits.
struct TraceOptions {
  Schedule schedule;      ///< Which steps are skipped, warm up, or are traced (the windows).
  std::string dir = ".";  ///< The directory the default handler writes windows under.
  /// Window w goes to `dir/<prefix>_<w>/rank<R>.json`.
  std::string prefix = "simprof_trace";
  /// CPU spans kept per window; beyond, dropped (and counted).
  std::size_t max_cpu_events = std::size_t{1} << 16;
  /// This process's rank; none: RankInfo::from_env() when the session is made.
  std::optional<RankInfo> ranks = std::nullopt;
  std::string backend = "none";  ///< distributedInfo.backend ("nccl" where ranks talk through NCCL)
  /// Written times on the wall clock (the offset taken at each window's start), relative to
  /// kTraceBaseTimeNs. False: the profiler clock's own nanoseconds, base 0 (deterministic tests).
  bool wall_clock = true;
  std::size_t max_collectives = 4096;  ///< collective scopes kept per window; beyond, dropped
  /// Hand each window over beside the loop: at the window's last step the loop only stops the
  /// sources; collecting what they recorded (the CUDA tracer: waiting for the window's kernels,
  /// flushing CUPTI, converting), the ready handler and the file run on a thread of the session's
  /// own while the loop goes on. windows() and files() grow once a window is written; wait()
  /// waits for it; the next window's start and the destructor wait too. The handler then runs on
  /// that thread.
  bool background = false;
  /// Check each window against the rules of trace/causality.hpp before it is handed on: the result
  /// goes in otherData ("causality"), and a window that breaks them is said (one warning naming the
  /// first violations). Nothing is dropped or changed.
  bool check_causality = true;
};

/// Records traces of a StepProfiler's steps in the windows of a Schedule: the CPU spans of its
/// stages and collectives, plus the spans of each TraceSource added, handed to a ready handler
/// (by default written as one Chrome/Kineto JSON file per window and rank).
class TraceSession : public StepListener {
 public:
  /// Called with each window's finished trace and the window's index.
  using ReadyFn = std::function<void(const Trace& trace, std::uint64_t window)>;

  /// Attaches to `prof` (validates the schedule).
  TraceSession(StepProfiler& prof, TraceOptions options = {});
  /// Waits for a window being handed over (background). Ending inside a window says so (one warning
  /// naming the phase and the steps seen); when its active phase had recorded steps, their CPU
  /// spans are written as a valid trace marked incomplete (otherData "incomplete": "true",
  /// "active_steps": "2 of 3") to path_of(window). The sources and the ready handler are not called
  /// then: they may be gone already.
  ~TraceSession() override;
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;

  /// Binds `source` to this session's timebase. Sources are not owned: the registration returned
  /// takes the source out of the session when it goes (keep it beside the source, declared after
  /// it). A source belongs to one session: a second add throws std::logic_error.
  [[nodiscard]] SourceRegistration add_source(TraceSource* source);
  /// Returns once every window ended so far is handed over (written, or given to the handler). At
  /// once without TraceOptions::background. Call it from the loop's thread.
  void wait();
  /// Replaces the default handler, which writes path_of(window):
  /// `dir/<prefix>_<window>/rank<R>.json`.
  void on_trace_ready(ReadyFn fn) { ready_ = std::move(fn); }

  // Results: safe to read from another thread while the loop runs.
  /// How many windows were handed over (written, or given to the handler) so far.
  std::uint64_t windows() const noexcept { return windows_.load(std::memory_order_acquire); }
  /// How many spans were lost so far, over every window (limits reached, sources' losses).
  std::uint64_t dropped() const noexcept { return dropped_total_.load(std::memory_order_relaxed); }
  /// The files written so far (a copy).
  std::vector<std::string> files() const {
    std::lock_guard<std::mutex> lock(files_mutex_);
    return files_;
  }
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
  void on_collective(const Collective& c, std::int64_t begin, std::int64_t end) override;
  /// An engine-measured stage (StepProfiler::record()): a CPU span on the loop's track, its args
  /// naming the clock ("clock": "engine" or the stage's set_stage_clock() name).
  void on_stage_recorded(StageId id, std::int64_t begin, std::int64_t end) override;
  /// A worker thread's engine zone (EngineZones): a CPU span on that thread's track.
  void on_worker_zone(StageId id, std::int64_t begin, std::int64_t end, std::int64_t tid) override;

  /// This process's rank and world size, as written in the traces' distributedInfo.
  const RankInfo& ranks() const noexcept { return ranks_; }
  /// Where window `w` is written by the default handler: `dir/<prefix>_<w>/rank<R>.json`.
  std::string path_of(std::uint64_t window) const;
  /// What the default handler does, for a handler of one's own that also wants the file: writes
  /// `trace` to path_of(window) (directories made), lists it in files() and returns the path.
  /// Throws std::runtime_error naming the path when it cannot be written.
  std::string write(const Trace& trace, std::uint64_t window);

 private:
  struct Recorded {
    StageId id;  // kStepStage for the step itself
    std::uint64_t step;
    std::int64_t begin, end;
    std::int64_t tid;     // the thread it ran on: its step's, or a worker's (EngineZones)
    bool engine = false;  // measured by the engine (StepProfiler::record())
  };
  struct RecordedCollective {
    Collective c;
    std::uint64_t step;
    std::int64_t begin, end, tid;
  };
  // A window ended: what the loop's thread takes (CPU spans, counters, metadata), then what can
  // run beside the loop (the sources' collection, the handler or the file).
  struct Window {
    Trace trace;
    std::vector<RecordedCollective> collectives;
    std::uint64_t dropped = 0;
    std::uint64_t index = 0;
    bool incomplete = false;
  };
  void save();
  Window close_window();
  void hand_over(Window& w);
  friend class TraceSource;  // forget()
  void forget(TraceSource* source) noexcept;
  void add_collectives(Trace& t, const std::vector<RecordedCollective>& collectives) const;
  void keep(const Recorded& r);

  StepProfiler& prof_;
  TraceOptions options_;
  TimeBase time_base_;
  std::vector<TraceSource*> sources_;
  ReadyFn ready_;
  std::int64_t index_ = 0;  // schedule steps seen
  ScheduleAction action_ = ScheduleAction::kNone;
  bool sources_running_ = false;
  std::vector<Recorded> recorded_;               // preallocated
  std::vector<RecordedCollective> collectives_;  // preallocated
  RankInfo ranks_;
  std::uint64_t step_ = 0;          // the profiler's number of the step in progress
  std::int64_t wall_offset_ = 0;    // wall clock minus the timebase, at the window's start
  int active_steps_ = 0;            // steps recorded in the window in progress
  bool incomplete_ = false;         // the window is written by the destructor
  std::vector<std::int64_t> open_;  // begin ticks of open stages, by id
  std::int64_t step_begin_ = 0;
  std::uint64_t dropped_ = 0;
  std::atomic<std::uint64_t> dropped_total_{0};
  std::uint64_t fps_samples_seen_ = 0;
  std::vector<std::pair<std::int64_t, double>> fps_;  // (ticks, total fps) in the window
  std::uint64_t next_window_ = 0;                     // the window in progress (the loop's thread)
  std::atomic<std::uint64_t> windows_{0};             // windows handed over
  std::thread writer_;                                // background: the window being handed over
  mutable std::mutex files_mutex_;
  std::vector<std::string> files_;
  std::int64_t pid_, tid_;
  ListenerAttachment attached_;  // last: the first to go, so no call reaches a half-gone listener
};

}  // namespace simprof
