// SPDX-License-Identifier: MIT
// StepProfiler: the live step rate and the per-step breakdown of a simulation loop.
//
/* clang-format off */
//   simprof::StepProfiler prof(simprof::ProfilingOptions{}, /*n_envs=*/4096);
//   const auto physics = prof.stage_id("physics");          // hot call sites: look names up once
//   for (int i = 0; i < n; ++i) {
//     auto step = prof.step();                               // ends the step when it leaves scope
//     if (!step) continue;                                   // vetoed by a pre-step callback
//     { auto s = prof.stage(physics);        engine.physics(); }
//     { auto s = prof.stage("sensors/Imu");  imu.update(); }  // also counted into "sensors"
//   }
//   prof.timings().at("physics");  // seconds in the latest step; also "step", "period", "sensors"
/* clang-format on */
//
// Engines' own timers: record() (MuJoCo's mjData.timer), EngineZones (Bullet's zone hooks).
//
// Semantics are Genesis's scene.timings (docs/profiling.md in full): "step" is the whole step
// scope, "period" runs start to start; a stage absent from a step is absent, the first step has no
// "period", a vetoed step (or one left by an exception) clears the map and is not counted; a stage
// run twice reports the sum; "a/b" is also counted into "a" unless "a" is open around it; with
// timings_window = N a stage is the mean of its latest N steps. On a GPU backend these are host
// (enqueue) times: cuda::StepPacer and cuda::DeviceStageTimer give the GPU's (docs/gpu-truth.md).
//
// A StepProfiler belongs to the thread that runs the loop; set_show_fps() alone may be called from
// another thread. Once every stage was seen, the hot paths allocate, lock and format nothing.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "simprof/base/clock.hpp"
#include "simprof/base/config.hpp"
#include "simprof/base/stats.hpp"
#include "simprof/detail/ring.hpp"
#include "simprof/profiler/fps_tracker.hpp"
#include "simprof/profiler/listener.hpp"
#include "simprof/profiler/options.hpp"
#include "simprof/profiler/scopes.hpp"
#include "simprof/profiler/step_tools.hpp"
#include "simprof/profiler/timings.hpp"

namespace simprof {

namespace detail {
class EngineZonesState;  // an EngineZones' insides (src/profiler/zones/state.hpp)
}  // namespace detail

/// The live step rate and the per-step breakdown of a simulation loop: steps and named stages timed
/// on one clock, their latest times, statistics and listeners (see the header comment).
class StepProfiler {
 public:
  /// Stage scopes that can be open at once (nesting depth).
  static constexpr std::size_t kMaxDepth = 32;

  /// Validates `options` (std::invalid_argument) and n_envs >= 0 (0: no batch dimension).
  explicit StepProfiler(ProfilingOptions options = {}, std::int64_t n_envs = 0);
  /// As above, reading `clock` instead of the one options.clock selects (a ManualClock's, in
  /// tests).
  StepProfiler(ProfilingOptions options, std::int64_t n_envs, Clock clock);
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;
  ~StepProfiler();

  // --- stages -------------------------------------------------------------------------------
  /// The id of `name`, registering it (and its parents: "a/b" registers "a") on first use. Names
  /// are non-empty, neither start nor end with '/', hold no empty component and are not "step" or
  /// "period"; anything else throws std::invalid_argument naming the name.
  StageId stage_id(std::string_view name);
  /// The id of a registered name, or kNoStage.
  StageId find_stage(std::string_view name) const noexcept;
  /// The name a stage was registered with; throws std::out_of_range for an unknown id.
  std::string_view stage_name(StageId id) const;
  /// Parent of a stage ("sensors" for "sensors/Imu"), or kNoStage.
  StageId stage_parent(StageId id) const;
  /// Stages registered so far, the built-in "step" and "period" included.
  std::size_t num_stages() const noexcept { return slots_.size(); }

  // --- steps and stages, RAII ---------------------------------------------------------------
  /// Begins a step that ends when the returned scope leaves; the scope is false when vetoed.
  [[nodiscard]] StepScope step() { return StepScope(*this); }
  /// Begins stage `id`, ended when the returned scope leaves.
  [[nodiscard]] StageScope stage(StageId id) { return StageScope(*this, id); }
  /// Looks `name` up in a hash map (no allocation once registered); prefer a StageId in hot loops.
  [[nodiscard]] StageScope stage(std::string_view name) {
    return StageScope(*this, stage_id(name));
  }

  // --- steps and stages, manual (for engines whose stages do not nest lexically) ------------
  /// Starts a step; throws std::logic_error inside a step. Returns false when vetoed.
  bool begin_step();
  /// Ends the step and publishes its timings; throws std::logic_error outside a step, or while a
  /// stage is open (the step is then dropped like a vetoed one, and the next step works). Returns
  /// false when the step was vetoed (the timings are then cleared).
  bool end_step();
  /// Marks the current step as vetoed; throws std::logic_error outside a step.
  void veto_step();
  /// True between begin_step() and end_step().
  bool in_step() const noexcept { return in_step_; }
  /// True when the current step was vetoed.
  bool step_vetoed() const noexcept { return vetoed_; }
  /// The innermost stage open now (kNoStage: none, or outside a step). The loop's thread's state:
  /// read it there (a CUDA graph's nodes are tagged with it while the step is captured).
  StageId innermost_stage() const noexcept {
    return in_step_ && depth_ != 0 ? stack_[depth_ - 1] : kNoStage;
  }

  /// Opens stage `id` in the current step; throws std::logic_error outside a step, for an unknown
  /// or already-open stage, or past kMaxDepth.
  SIMPROF_FORCE_INLINE void begin_stage(StageId id) {
    if (SIMPROF_UNLIKELY(!in_step_ || id >= slots_.size() || id < kFirstUserStage ||
                         depth_ == kMaxDepth || slots_[id].open))
      throw_begin_error(id);
    Slot& s = slots_[id];
    s.open = true;
    stack_[depth_++] = id;
    const std::int64_t t = clock_.now();
    s.start = t;
    cursor_[depth_] = t;  // a span recorded inside starts here
    if (SIMPROF_UNLIKELY(!listeners_.empty()))
      notify([id, t](StepListener* l) { l->on_stage_begin(id, t); });
  }
  /// Ends the innermost open stage, which must be `id` (std::logic_error otherwise).
  SIMPROF_FORCE_INLINE void end_stage(StageId id) {
    const std::int64_t t = clock_.now();
    if (SIMPROF_UNLIKELY(depth_ == 0 || stack_[depth_ - 1] != id)) throw_end_error(id);
    close_stage(id, t);
  }

  // --- engine-measured time -------------------------------------------------------------------
  /// Counts `seconds` the engine measured itself (MuJoCo's mjData.timer[i].duration) as one run
  /// of stage `id` in the current step, exactly as a scope of that length: into timings(), its
  /// parents (unless open), stats(). Listeners get on_stage_recorded(), placed inside the
  /// innermost open stage (or the step), after the span that ended last there, clamped to now.
  /// Throws std::logic_error outside a step or when `id` is open now, std::invalid_argument for an
  /// unregistered id or `seconds` not finite, negative or beyond the clock's range. Allocates
  /// nothing.
  void record(StageId id, double seconds);
  /// record() by name (registered on first use, as stage(name) does).
  void record(std::string_view name, double seconds) { record(stage_id(name), seconds); }
  /// Names the clock the engine measures stage `id` with ("mjcb_time"): the trace writes it on the
  /// stage's recorded spans (args "clock"; "engine" when unnamed). Throws std::invalid_argument for
  /// an unregistered id or an empty name.
  void set_stage_clock(StageId id, std::string_view clock);
  /// The clock set_stage_clock() named for `id`, or "" (none named, or an unknown id).
  std::string_view stage_clock(StageId id) const noexcept;

  /// Called at every step start, in order, inside the step's time; returning false vetoes the step.
  void add_pre_step_callback(std::function<bool()> callback);

  // --- results ------------------------------------------------------------------------------
  /// The latest published step's breakdown, in seconds by stage.
  const StageTimings& timings() const noexcept { return timings_; }
  /// Latency statistics of a stage over the latest options().stats_window steps that ran it (and
  /// were published). Throws std::invalid_argument for an unknown stage or when stats_window is 0.
  LatencyStats stats(StageId stage) const;
  /// stats() by name: a lookup, then stats(StageId).
  LatencyStats stats(std::string_view stage) const;
  /// stats(), history(), histogram(), stage_table() forget every step so far (after a warm-up).
  void reset_stats() noexcept;
  /// The samples behind stats(), oldest first, in seconds.
  std::vector<double> history(StageId stage) const;
  /// history() by name.
  std::vector<double> history(std::string_view stage) const;
  /// A text histogram of `stage`'s samples behind stats() (text_histogram()).
  std::string histogram(StageId stage, const HistogramOptions& options = {}) const;
  /// histogram() by name.
  std::string histogram(std::string_view stage, const HistogramOptions& options = {}) const;

  /// Steps that ended and were published (vetoed and aborted ones are not counted).
  std::uint64_t steps() const noexcept { return published_; }
  /// Steps begun, vetoed or not: the index the next step will have.
  std::uint64_t step_index() const noexcept { return serial_; }
  /// The batch size the FPS line divides by (0: no batch dimension).
  std::int64_t n_envs() const noexcept { return n_envs_; }
  /// Unique among the profilers of the process (they are numbered as they are made, from 1).
  std::uint32_t instance_id() const noexcept { return instance_; }
  /// The options as they are now: show_fps follows set_show_fps().
  ProfilingOptions options() const noexcept {
    ProfilingOptions o = options_;
    o.show_fps = fps_.show();
    return o;
  }
  /// The clock every stage and step time is read from.
  const Clock& clock() const noexcept { return clock_; }

  // --- FPS ----------------------------------------------------------------------------------
  /// The FPS tracker ticked at every step start.
  FpsTracker& fps() noexcept { return fps_; }
  /// The FPS tracker ticked at every step start.
  const FpsTracker& fps() const noexcept { return fps_; }
  /// Safe from any thread; takes effect at the next sample.
  void set_show_fps(bool show) noexcept { fps_.set_show(show); }

  // --- plumbing -----------------------------------------------------------------------------
  /// Attaches `listener` (called after those attached before) until the returned attachment goes;
  /// either may go first. Throws std::logic_error inside a step.
  [[nodiscard]] ListenerAttachment attach(StepListener& listener);
  /// The attached listeners, in the order they are called.
  const std::vector<StepListener*>& listeners() const noexcept { return listeners_; }
  /// f(listener) for each listener in attach order (one a callback detached is not called).
  template <class F>
  void notify(F&& f) {
    const Walk walk(*this);
    for (std::size_t i = 0; i < listeners_.size(); ++i) f(listeners_[i]);
  }
  /// Takes ownership of a backend's tools (step_tools.hpp): the profiler destroys them first when
  /// it goes. One owner of the profiler's tools: throws std::logic_error when it holds some
  /// already.
  void own_tools(std::shared_ptr<StepTools> tools);
  /// Gives up `tools` (those own_tools() took; anything else: no change). They are destroyed here
  /// unless the caller holds them too.
  void release_tools(const StepTools* tools) noexcept;
  /// The tools the profiler owns (null: none).
  StepTools* tools() const noexcept { return tools_.get(); }
  /// The tools of the profiler whose step is open on the calling thread (null: no step open, or
  /// its profiler owns none). A graph cache run inside a step finds the profiler's stamps here.
  /// With steps of two profilers that own tools open at once on one thread, the one begun last
  /// holds it, and when it ends no tools are found until the next step begins.
  static StepTools* tools_in_step() noexcept;
  /// Where misuse detected in a destructor goes (it cannot throw there). Default: the simprof
  /// logger at error level.
  void set_error_handler(std::function<void(const std::string&)> handler);

 private:
  friend class EngineZones;               // registers its state in zones_
  friend class detail::EngineZonesState;  // ends its zones at the step's end
  template <bool>
  friend class BasicStepScope;
  template <bool>
  friend class BasicStageScope;
  friend class StageTimings;
  static constexpr StageId kFirstUserStage = 2;

  // Publication is lazy: ending a step only records its serial in published_. A slot keeps the
  // ticks of the latest step that ran it (accum, step ran_in) and of the one before (prev, step
  // prev_in); the published value is whichever of the two belongs to published_. When a slot is
  // first touched in a new step, its previous total is retired into prev, and into the window and
  // history rings when those are on, so a step end costs the same however many stages exist.
  struct Slot {
    StageId parent = kNoStage;
    bool open = false;
    std::uint64_t ran_in = 0;  // serial of the step whose ticks `accum` holds; 0: none
    std::uint64_t prev_in = 0;
    std::int64_t start = 0;
    std::int64_t accum = 0;
    std::int64_t prev = 0;
    detail::Ring<std::int64_t> window;  // retired totals, when timings_window > 1
    std::int64_t window_sum = 0;
    detail::Ring<std::int64_t> history;  // retired totals, when stats_window > 0
  };

  SIMPROF_FORCE_INLINE void add_time(Slot& s, std::int64_t d) noexcept {
    if (SIMPROF_LIKELY(s.ran_in == serial_)) {
      s.accum += d;
      return;
    }
    if (s.ran_in != 0) retire(s);
    s.ran_in = serial_;
    s.accum = d;
  }
  SIMPROF_FORCE_INLINE void retire(Slot& s) noexcept {
    s.prev = s.accum;
    s.prev_in = s.ran_in;
    if (SIMPROF_UNLIKELY(tracking_)) {
      if (s.window.capacity()) {
        if (s.window.full()) s.window_sum -= s.window.oldest();
        s.window.push(s.accum);
        s.window_sum += s.accum;
      }
      if (s.ran_in > stats_from_) s.history.push(s.accum);
    }
  }
  SIMPROF_FORCE_INLINE void close_stage(StageId id, std::int64_t t) noexcept {
    cursor_[--depth_] = t;  // a span recorded next at this level starts after this one
    Slot& s = slots_[id];
    s.open = false;
    const std::int64_t d = t - s.start;
    add_time(s, d);
    for (StageId p = s.parent; p != kNoStage && !slots_[p].open; p = slots_[p].parent)
      add_time(slots_[p], d);
    if (SIMPROF_UNLIKELY(!listeners_.empty()))
      notify([id, t](StepListener* l) { l->on_stage_end(id, t); });
  }
  /// Seconds of stage `id` in the published step (window mean), or a negative value when absent.
  double published_seconds(StageId id) const noexcept;
  std::vector<std::int64_t> history_ticks(const Slot& s) const;
  void end_stage_noexcept(StageId id) noexcept;
  void end_zones(std::int64_t t) noexcept;  // every EngineZones' step end, once per step
  void finish_step_noexcept(bool unwinding) noexcept;
  void drop_step(std::int64_t t, StepOutcome outcome) noexcept;
  [[noreturn]] void throw_begin_error(StageId id) const;
  [[noreturn]] void throw_end_error(StageId id) const;
  void report(const std::string& message) const noexcept;
  StageId register_stage(std::string_view name, StageId parent);
  const Slot& slot_for(StageId stage, const char* what) const;  // throws for a bad id or no stats
  StageId checked_stage(std::string_view stage, const char* what) const;  // throws if unknown

  ProfilingOptions options_;
  std::int64_t n_envs_;
  std::uint32_t instance_;
  Clock clock_;
  std::deque<std::string> names_;  // deque: string_views into it stay valid as it grows
  std::unordered_map<std::string_view, StageId> lookup_;
  std::vector<Slot> slots_;
  std::array<StageId, kMaxDepth> stack_{};
  std::size_t depth_ = 0;
  std::array<std::int64_t, kMaxDepth + 1> cursor_{};  // where record()'s next span starts, by depth
  std::vector<std::string> clocks_;                   // set_stage_clock(), by id (grown on use)
  std::vector<detail::EngineZonesState*> zones_;      // attached EngineZones' (they register)
  std::uint64_t zones_ended_in_ = 0;  // serial of the step whose zones end_zones() ended
  bool in_step_ = false, vetoed_ = false, have_prev_ = false;
  std::uint64_t serial_ = 0;            // steps begun; the current step's serial while in a step
  std::uint64_t published_ = 0;         // steps published
  std::uint64_t stats_from_ = 0;        // steps with serials up to this one left stats (reset)
  std::uint64_t published_serial_ = 0;  // serial of the step timings() shows; 0: none (empty map)
  bool tracking_ = false;               // window or history rings on
  std::int64_t step_start_ = 0;
  std::int64_t prev_start_ = 0;
  StageTimings timings_;
  FpsTracker fps_;
  std::vector<std::function<bool()>> pre_step_;
  std::vector<StepListener*> listeners_;
  std::vector<ListenerAttachment*> attachments_;  // told when the profiler goes first
  // Detached during a walk (notifying_ > 0): a no-op holds the place until the walk ends.
  int notifying_ = 0;
  bool stale_listeners_ = false;
  void compact_listeners() noexcept;
  struct Walk {  // notify()'s: counts the walks in progress, compacts after the last
    StepProfiler& p;
    explicit Walk(StepProfiler& prof) noexcept : p(prof) { ++p.notifying_; }
    ~Walk() {
      if (--p.notifying_ == 0 && p.stale_listeners_) p.compact_listeners();
    }
  };
  friend class ListenerAttachment;
  void detach(ListenerAttachment* a) noexcept;
  std::function<void(const std::string&)> error_handler_;
  std::shared_ptr<StepTools> tools_;
  bool step_tools_set_ = false;  // this step set tools_in_step()
  void enter_step_tools() noexcept;
  void leave_step_tools() noexcept;
};

template <bool Nullable>
inline BasicStageScope<Nullable>::BasicStageScope(Profiler prof, StageId id)
    : prof_(detail::pointer(prof)), id_(id) {
  if (!Nullable || prof_) prof_->begin_stage(id);
}
template <bool Nullable>
inline BasicStageScope<Nullable>::BasicStageScope(Profiler prof, detail::StageSite& site)
    : prof_(detail::pointer(prof)), id_(kNoStage) {
  if (!Nullable || prof_) {
    id_ = site.id(*prof_);
    prof_->begin_stage(id_);
  }
}
template <bool Nullable>
inline BasicStageScope<Nullable>::~BasicStageScope() {
  if (!Nullable || prof_) prof_->end_stage_noexcept(id_);
}

SIMPROF_FORCE_INLINE StageId detail::StageSite::id(StepProfiler& prof) {
  const std::uint64_t k = key_.load(std::memory_order_relaxed);
  if (SIMPROF_LIKELY(static_cast<std::uint32_t>(k >> 32) == prof.instance_id()))
    return static_cast<StageId>(k);
  return refresh(prof);
}

template <bool Nullable>
inline BasicStepScope<Nullable>::BasicStepScope(Profiler prof)
    : prof_(detail::pointer(prof)), uncaught_at_begin_(std::uncaught_exceptions()) {
  if (!Nullable || prof_) prof_->begin_step();
}
// More exceptions in flight than at the step's begin: one is unwinding through the step (a step
// scope inside a destructor run by unwinding ends normally).
template <bool Nullable>
inline BasicStepScope<Nullable>::~BasicStepScope() {
  if (!Nullable || prof_)
    prof_->finish_step_noexcept(std::uncaught_exceptions() > uncaught_at_begin_);
}
template <bool Nullable>
inline BasicStepScope<Nullable>::operator bool() const noexcept {
  return (Nullable && !prof_) || !prof_->vetoed_;
}
template <bool Nullable>
inline void BasicStepScope<Nullable>::veto() noexcept {
  if (!Nullable || prof_) prof_->vetoed_ = true;
}

}  // namespace simprof
