// SPDX-License-Identifier: MIT
#include "simprof/profiler/step_profiler.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "simprof/base/log.hpp"
#include "simprof/profiler/engine_zones.hpp"
#include "zones/state.hpp"

namespace simprof {

namespace {

void check_stage_name(std::string_view name) {
  auto bad = [&](std::string_view why) {
    throw std::invalid_argument(fmt::format("simprof: stage name '{}' {}", name, why));
  };
  if (name.empty())
    throw std::invalid_argument("simprof: stage name is empty (expected e.g. \"physics\")");
  if (name == "step" || name == "period") bad("is reserved: the profiler publishes it itself");
  if (name.front() == '/' || name.back() == '/') bad("starts or ends with '/' (expected \"a/b\")");
  if (name.find("//") != std::string_view::npos) bad("has an empty component ('//')");
}

// Profiler instance ids, from 1 (0 marks a call site that has seen none). After 2^32 profilers
// they wrap around, skipping 0.
std::uint32_t next_instance() noexcept {
  static std::atomic<std::uint32_t> counter{0};
  std::uint32_t id = counter.fetch_add(1, std::memory_order_relaxed) + 1;
  while (id == 0) id = counter.fetch_add(1, std::memory_order_relaxed) + 1;
  return id;
}

}  // namespace

// --- views ----------------------------------------------------------------------------------

namespace detail {
StageId find_stage_of(const StepProfiler& prof, std::string_view name) noexcept {
  return prof.find_stage(name);
}
std::string_view stage_name_of(const StepProfiler& prof, StageId id) noexcept {
  return id < prof.num_stages() ? prof.stage_name(id) : std::string_view("?");
}
StageId stage_count_of(const StepProfiler& prof) noexcept {
  return static_cast<StageId>(prof.num_stages());
}
void throw_missing_stage(std::string_view what, std::string_view present, bool registered) {
  throw std::out_of_range(fmt::format(
      "simprof: no timing for stage '{}' {} (present: {})", what,
      registered ? "in the latest step" : "(that name was never registered)",
      present.empty() ? std::string_view("none: no step has ended since the start or the last veto")
                      : present));
}

StageId StageSite::refresh(StepProfiler& prof) {
  const StageId id = prof.stage_id(name_);
  key_.store(static_cast<std::uint64_t>(prof.instance_id()) << 32 | id, std::memory_order_relaxed);
  return id;
}
}  // namespace detail

bool StageTimings::empty() const noexcept { return owner_->published_serial_ == 0; }

std::optional<double> StageTimings::find(StageId id) const noexcept {
  if (id >= owner_->slots_.size()) return std::nullopt;
  const double v = owner_->published_seconds(id);
  if (v < 0) return std::nullopt;
  return v;
}

// --- StepProfiler -----------------------------------------------------------------------------

StepProfiler::StepProfiler(ProfilingOptions options, std::int64_t n_envs)
    : StepProfiler((options.validate(), options), n_envs, Clock::from_source(options.clock)) {}

StepProfiler::StepProfiler(ProfilingOptions options, std::int64_t n_envs, Clock clock)
    : options_((options.validate(), options)),
      n_envs_(n_envs),
      instance_(next_instance()),
      clock_(clock),
      timings_(this),
      fps_(options.fps_tracker_alpha, options.fps_sample_interval, n_envs, clock) {
  fps_.set_show(options_.show_fps);
  fps_.set_rank(RankInfo::from_env());  // "[rank R/W] " on the FPS line of a multi-process run
  tracking_ = options_.timings_window > 1 || options_.stats_window > 0;
  register_stage("step", kNoStage);
  register_stage("period", kNoStage);
}

StepProfiler::~StepProfiler() {
  // The tools go first, while the profiler they detach from is whole.
  leave_step_tools();
  tools_.reset();
  for (ListenerAttachment* a : attachments_) a->prof_ = nullptr;
}

StageId StepProfiler::register_stage(std::string_view name, StageId parent) {
  const auto id = static_cast<StageId>(slots_.size());
  names_.emplace_back(name);
  lookup_.emplace(std::string_view(names_.back()), id);
  Slot s;
  s.parent = parent;
  if (options_.timings_window > 1) s.window = detail::Ring<std::int64_t>(options_.timings_window);
  s.history = detail::Ring<std::int64_t>(options_.stats_window);
  slots_.push_back(std::move(s));
  return id;
}

StageId StepProfiler::find_stage(std::string_view name) const noexcept {
  const auto it = lookup_.find(name);
  return it == lookup_.end() ? kNoStage : it->second;
}

StageId StepProfiler::stage_id(std::string_view name) {
  if (const StageId id = find_stage(name); id != kNoStage && id >= kFirstUserStage) return id;
  check_stage_name(name);
  const std::size_t slash = name.rfind('/');
  const StageId parent =
      slash == std::string_view::npos ? kNoStage : stage_id(name.substr(0, slash));
  return register_stage(name, parent);
}

std::string_view StepProfiler::stage_name(StageId id) const {
  if (id >= names_.size())
    throw std::out_of_range(fmt::format("simprof: stage id {} (expected < {})", id, names_.size()));
  return names_[id];
}

StageId StepProfiler::stage_parent(StageId id) const {
  if (id >= slots_.size())
    throw std::out_of_range(fmt::format("simprof: stage id {} (expected < {})", id, slots_.size()));
  return slots_[id].parent;
}

void StepProfiler::add_pre_step_callback(std::function<bool()> callback) {
  if (!callback) throw std::invalid_argument("simprof: add_pre_step_callback: empty callback");
  if (in_step_) throw std::logic_error("simprof: add_pre_step_callback inside a step");
  pre_step_.push_back(std::move(callback));
}

void StepProfiler::set_error_handler(std::function<void(const std::string&)> handler) {
  error_handler_ = std::move(handler);
}

void StepProfiler::report(const std::string& message) const noexcept {
  try {
    if (error_handler_)
      error_handler_(message);
    else
      default_logger()->error("{}", message);
  } catch (...) {
    // An error handler must not take the simulation down.
  }
}

bool StepProfiler::begin_step() {
  if (in_step_)
    throw std::logic_error(fmt::format(
        "simprof: step inside a step: step {} is still open (end it before starting another)",
        serial_ - 1));
  const std::int64_t t = clock_.now();
  in_step_ = true;
  vetoed_ = false;
  ++serial_;
  step_start_ = t;
  cursor_[0] = t;
  if (SIMPROF_UNLIKELY(tools_ != nullptr)) enter_step_tools();
  if (SIMPROF_UNLIKELY(!listeners_.empty()))
    notify([this, t](StepListener* l) { l->on_step_begin(serial_ - 1, t); });
  for (auto& cb : pre_step_) {
    bool ok = false;
    try {
      ok = cb();
    } catch (...) {
      const std::int64_t now = clock_.now();
      end_zones(now);
      drop_step(now, StepOutcome::kAborted);
      throw;
    }
    if (!ok) {
      vetoed_ = true;
      break;
    }
  }
  return !vetoed_;
}

void StepProfiler::veto_step() {
  if (!in_step_) throw std::logic_error("simprof: veto_step() outside a step");
  vetoed_ = true;
}

void StepProfiler::drop_step(std::int64_t t, StepOutcome outcome) noexcept {
  depth_ = 0;
  for (auto& s : slots_) {
    s.open = false;
    if (s.ran_in == serial_) s.ran_in = 0;  // the dropped step's times are never published
  }
  in_step_ = false;
  leave_step_tools();
  published_serial_ = 0;
  have_prev_ = false;
  if (fps_.clock_kind() == FpsClock::kHost) fps_.restart();  // a device feed sees the veto itself
  if (SIMPROF_UNLIKELY(!listeners_.empty()))
    notify([this, t, outcome](StepListener* l) { l->on_step_end(serial_ - 1, t, outcome); });
}

void StepProfiler::end_zones(std::int64_t t) noexcept {
  if (zones_.empty() || zones_ended_in_ == serial_) return;
  zones_ended_in_ = serial_;  // finish_step_noexcept() then end_step(): the zones end once
  for (auto* z : zones_) z->step_ending(t);
}

bool StepProfiler::end_step() {
  if (!in_step_) throw std::logic_error("simprof: end_step() outside a step");
  if (SIMPROF_UNLIKELY(!zones_.empty())) end_zones(clock_.now());
  if (depth_ != 0) {
    // The step is dropped like a vetoed one, so the profiler stays usable: the next step works.
    std::string message = fmt::format(
        "simprof: unbalanced scopes: stage '{}' is still open at the end of step {}; the step is "
        "dropped",
        names_[stack_[depth_ - 1]], serial_ - 1);
    drop_step(clock_.now(), StepOutcome::kAborted);
    throw std::logic_error(std::move(message));
  }
  const std::int64_t t = clock_.now();
  if (vetoed_) {
    drop_step(t, StepOutcome::kVetoed);
    return false;
  }
  in_step_ = false;
  leave_step_tools();
  add_time(slots_[kStepStage], t - step_start_);
  if (have_prev_) add_time(slots_[kPeriodStage], step_start_ - prev_start_);

  published_serial_ = serial_;
  ++published_;
  prev_start_ = step_start_;
  have_prev_ = true;
  if (SIMPROF_LIKELY(fps_.clock_kind() == FpsClock::kHost)) fps_.tick(step_start_);
  if (SIMPROF_UNLIKELY(!listeners_.empty()))
    notify([this, t](StepListener* l) { l->on_step_end(serial_ - 1, t, StepOutcome::kCompleted); });
  return true;
}

void StepProfiler::finish_step_noexcept(bool unwinding) noexcept {
  if (!in_step_) return;  // already ended through the manual API
  if (SIMPROF_UNLIKELY(!zones_.empty())) end_zones(clock_.now());
  if (unwinding) {
    drop_step(clock_.now(), StepOutcome::kAborted);
    return;
  }
  if (depth_ != 0) {
    report(fmt::format(
        "simprof: unbalanced scopes: stage '{}' is still open at the end of step {}; the step is "
        "dropped",
        names_[stack_[depth_ - 1]], serial_ - 1));
    drop_step(clock_.now(), StepOutcome::kAborted);
    return;
  }
  try {
    end_step();
  } catch (const std::exception& e) {
    report(e.what());  // a throwing FPS callback, say: report it, never throw from a destructor
  }
}

void StepProfiler::record(StageId id, double seconds) {
  if (id >= slots_.size() || id < kFirstUserStage)
    throw std::invalid_argument(fmt::format(
        "simprof: record(): stage id {} is not a registered stage (expected an id from stage_id())",
        id));
  if (!in_step_)
    throw std::logic_error(fmt::format(
        "simprof: record('{}', {} s) outside a step (record an engine's times inside the step "
        "that ran them)",
        names_[id], seconds));
  // Beyond 4e18 ticks a sum of a few of them could overflow the int64 accumulators.
  const double limit = 4e18 / clock_.ticks_per_second();
  if (!std::isfinite(seconds) || seconds < 0 || seconds > limit)
    throw std::invalid_argument(fmt::format(
        "simprof: record('{}', {}): expected a finite duration in seconds, >= 0 and <= {:g}",
        names_[id], seconds, limit));
  Slot& s = slots_[id];
  if (s.open)
    throw std::logic_error(fmt::format(
        "simprof: record('{}') while that stage is open: its scope times it already (record the "
        "engine's time outside the scope)",
        names_[id]));
  const std::int64_t d = clock_.ticks(seconds);
  add_time(s, d);
  for (StageId p = s.parent; p != kNoStage && !slots_[p].open; p = slots_[p].parent)
    add_time(slots_[p], d);
  if (SIMPROF_UNLIKELY(!listeners_.empty())) {
    // The engine's time has no place on our clock: lay it after whatever ended last inside the
    // innermost open stage, and never past now, so that the trace's nesting stays true.
    const std::int64_t now = clock_.now();
    const std::int64_t begin = std::min(cursor_[depth_], now);
    const std::int64_t end = d > now - begin ? now : begin + d;
    cursor_[depth_] = end;
    notify([id, begin, end](StepListener* l) { l->on_stage_recorded(id, begin, end); });
  }
}

void StepProfiler::set_stage_clock(StageId id, std::string_view clock) {
  if (id >= slots_.size() || id < kFirstUserStage)
    throw std::invalid_argument(fmt::format(
        "simprof: set_stage_clock(): stage id {} is not a registered stage (expected an id from "
        "stage_id())",
        id));
  if (clock.empty())
    throw std::invalid_argument(fmt::format(
        "simprof: set_stage_clock('{}', \"\"): the clock's name is empty (expected e.g. "
        "\"mjcb_time\")",
        names_[id]));
  if (clocks_.size() <= id) clocks_.resize(slots_.size());
  clocks_[id] = std::string(clock);
}

std::string_view StepProfiler::stage_clock(StageId id) const noexcept {
  return id < clocks_.size() ? std::string_view(clocks_[id]) : std::string_view();
}

void StepProfiler::end_stage_noexcept(StageId id) noexcept {
  const std::int64_t t = clock_.now();
  if (SIMPROF_UNLIKELY(depth_ == 0 || stack_[depth_ - 1] != id)) {
    if (in_step_)  // after a dropped step there is nothing left to close
      report(fmt::format("simprof: unbalanced scopes: stage '{}' ended while '{}' is innermost",
                         id < names_.size() ? names_[id] : std::string("?"),
                         depth_ ? names_[stack_[depth_ - 1]] : std::string("nothing")));
    return;
  }
  close_stage(id, t);
}

void StepProfiler::throw_begin_error(StageId id) const {
  if (id >= slots_.size() || id < kFirstUserStage)
    throw std::invalid_argument(fmt::format(
        "simprof: stage id {} is not a registered stage (expected an id from stage_id())", id));
  if (!in_step_)
    throw std::logic_error(fmt::format(
        "simprof: stage '{}' begun outside a step (open a step with step() or begin_step() first)",
        names_[id]));
  if (slots_[id].open)
    throw std::logic_error(fmt::format(
        "simprof: stage '{}' begun while it is already open (stages do not recurse)", names_[id]));
  throw std::logic_error(
      fmt::format("simprof: stage '{}' nested deeper than {} levels", names_[id], kMaxDepth));
}

void StepProfiler::throw_end_error(StageId id) const {
  const std::string name = id < names_.size() ? names_[id] : fmt::format("#{}", id);
  if (depth_ == 0)
    throw std::logic_error(
        fmt::format("simprof: unbalanced scopes: end_stage('{}') with no open stage", name));
  throw std::logic_error(fmt::format(
      "simprof: unbalanced scopes: end_stage('{}') while '{}' is the innermost open stage", name,
      names_[stack_[depth_ - 1]]));
}

}  // namespace simprof
