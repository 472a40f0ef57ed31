// SPDX-License-Identifier: MIT
#include "simprof/trace/session.hpp"

#include "simprof/trace/collective_args.hpp"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "simprof/base/log.hpp"
#include "simprof/detail/thread_id.hpp"
#include "simprof/trace/causality.hpp"
#include "simprof/trace/chrome_json.hpp"

#if defined(__linux__)
#include <unistd.h>
#endif

namespace simprof {

namespace {
std::int64_t this_pid() {
#if defined(__linux__)
  return static_cast<std::int64_t>(::getpid());
#else
  return 1;
#endif
}
std::int64_t this_tid() { return detail::os_thread_id(); }
bool recording(ScheduleAction a) {
  return a == ScheduleAction::kRecord || a == ScheduleAction::kRecordAndSave;
}
}  // namespace

TraceSession::TraceSession(StepProfiler& prof, TraceOptions options)
    : prof_(prof),
      options_(std::move(options)),
      time_base_(prof.clock()),
      pid_(this_pid()),
      tid_(this_tid()) {
  options_.schedule.validate();
  if (options_.max_cpu_events == 0)
    throw std::invalid_argument("simprof: TraceOptions.max_cpu_events = 0 (expected >= 1)");
  ranks_ = options_.ranks ? *options_.ranks : RankInfo::from_env();
  ranks_.validate();
  recorded_.reserve(options_.max_cpu_events);
  collectives_.reserve(options_.max_collectives);
  open_.resize(prof.num_stages(), 0);
  action_ = options_.schedule.action(0);
  attached_ = prof_.attach(*this);
}

// A session that ends inside a window says so; when the active phase had recorded steps, it writes
// their CPU spans as a valid trace marked incomplete (otherData.incomplete) to the default path.
TraceSession::~TraceSession() {
  attached_.detach();
  wait();
  for (auto* s : sources_) {
    if (sources_running_) s->abandon();  // the window in progress is never collected
    s->session_ = nullptr;
  }
  if (!sources_running_ && active_steps_ == 0) return;
  try {
    const Schedule& s = options_.schedule;
    if (active_steps_ == 0) {  // the warm-up: nothing recorded to keep
      default_logger()->warn(
          "simprof: trace session ended in window {}'s warm-up (before its {} active steps): "
          "nothing was recorded",
          next_window_, s.active);
      return;
    }
    default_logger()->warn(
        "simprof: trace session ended in window {}'s active phase after {} of {} steps: writing "
        "its CPU spans to {}, marked incomplete",
        next_window_, active_steps_, s.active, path_of(next_window_));
    incomplete_ = true;
    save();
  } catch (const std::exception& e) {
    try {
      default_logger()->error("simprof: trace session ending early: {}", e.what());
    } catch (...) {
    }
  } catch (...) {
  }
}

SourceRegistration TraceSession::add_source(TraceSource* source) {
  if (source == nullptr)
    throw std::invalid_argument("simprof: TraceSession::add_source: null source");
  wait();  // a window being handed over reads the sources
  if (source->session_ != nullptr)
    throw std::logic_error(
        "simprof: TraceSession::add_source: the source belongs to a session already (one each)");
  source->bind(time_base_);
  sources_.push_back(source);
  source->session_ = this;
  return SourceRegistration(source);
}

void TraceSession::forget(TraceSource* source) noexcept {
  sources_.erase(std::remove(sources_.begin(), sources_.end(), source), sources_.end());
}

void TraceSession::wait() {
  if (writer_.joinable()) writer_.join();
}

TraceSource::~TraceSource() {
  if (registration_ != nullptr) registration_->source_ = nullptr;
  leave_session();
}

SourceRegistration::SourceRegistration(TraceSource* source) noexcept : source_(source) {
  source_->registration_ = this;
}

SourceRegistration::SourceRegistration(SourceRegistration&& other) noexcept
    : source_(other.source_) {
  other.source_ = nullptr;
  if (source_ != nullptr) source_->registration_ = this;
}

SourceRegistration& SourceRegistration::operator=(SourceRegistration&& other) noexcept {
  if (this != &other) {
    reset();
    source_ = other.source_;
    other.source_ = nullptr;
    if (source_ != nullptr) source_->registration_ = this;
  }
  return *this;
}

void SourceRegistration::reset() noexcept {
  if (source_ == nullptr) return;
  source_->registration_ = nullptr;
  source_->leave_session();
  source_ = nullptr;
}

void TraceSource::leave_session() noexcept {
  if (session_ == nullptr) return;
  session_->wait();
  // Inside a window: never collected. (From ~TraceSource the derived source is gone already and
  // this is the base's no-op; its own destructor stopped it.)
  if (session_->sources_running_) abandon();
  session_->forget(this);
  session_ = nullptr;
}

std::string TraceSession::path_of(std::uint64_t window) const {
  return fmt::format("{}/{}_{}/rank{}.json", options_.dir, options_.prefix, window, ranks_.rank);
}

std::string TraceSession::write(const Trace& trace, std::uint64_t window) {
  const std::string path = path_of(window);
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  write_chrome_trace(trace, path);
  std::lock_guard<std::mutex> lock(files_mutex_);
  files_.push_back(path);
  return path;
}

void TraceSession::on_step_begin(std::uint64_t step, std::int64_t ticks) {
  const ScheduleAction prev =
      index_ > 0 ? options_.schedule.action(index_ - 1) : ScheduleAction::kNone;
  action_ = options_.schedule.action(index_);
  step_ = step;
  tid_ = this_tid();  // the step's thread (the one that begins it), not the session's maker
  if (action_ != ScheduleAction::kNone && !sources_running_) {
    wait();  // the last window's collection (background) must end before the sources start again
    // Anchored to the wall clock per window: no drift between the processes' clocks.
    if (options_.wall_clock) wall_offset_ = time_base_.wall_offset_ns();
    for (auto* s : sources_) s->start();
    sources_running_ = true;
  } else if (recording(action_) && prev == ScheduleAction::kWarmup) {
    for (auto* s : sources_) s->discard();  // warm-up results are not kept
  }
  step_begin_ = ticks;
}

void TraceSession::on_stage_begin(StageId id, std::int64_t ticks) {
  if (!recording(action_)) return;
  if (id >= open_.size()) open_.resize(prof_.num_stages(), 0);  // a stage seen for the first time
  open_[id] = ticks;
}

void TraceSession::on_stage_end(StageId id, std::int64_t ticks) {
  if (!recording(action_) || id >= open_.size()) return;
  keep(Recorded{id, step_, open_[id], ticks, tid_});
}

void TraceSession::keep(const Recorded& r) {
  if (recorded_.size() < options_.max_cpu_events)
    recorded_.push_back(r);
  else
    ++dropped_;
}

void TraceSession::on_stage_recorded(StageId id, std::int64_t begin, std::int64_t end) {
  if (recording(action_)) keep(Recorded{id, step_, begin, end, tid_, true});
}

void TraceSession::on_worker_zone(StageId id, std::int64_t begin, std::int64_t end,
                                  std::int64_t tid) {
  if (recording(action_)) keep(Recorded{id, step_, begin, end, tid, false});
}

void TraceSession::on_step_end(std::uint64_t, std::int64_t ticks, StepOutcome) {
  if (recording(action_)) {
    keep(Recorded{kStepStage, step_, step_begin_, ticks, tid_});
    if (prof_.fps().num_samples() != fps_samples_seen_) {
      fps_samples_seen_ = prof_.fps().num_samples();
      fps_.emplace_back(ticks, prof_.fps().total_fps());
    }
    ++active_steps_;
    if (action_ == ScheduleAction::kRecordAndSave) save();
  } else {
    fps_samples_seen_ = prof_.fps().num_samples();
  }
  ++index_;
  action_ = options_.schedule.action(index_);
}

void TraceSession::on_collective(const Collective& c, std::int64_t begin, std::int64_t end) {
  if (!recording(action_)) return;
  if (collectives_.size() < options_.max_collectives)
    collectives_.push_back(RecordedCollective{c, step_, begin, end, this_tid()});
  else
    ++dropped_;
}

// Each collective scope becomes a CPU span with Kineto's collective arguments, and gives them to
// the communication kernels ("nccl...") launched inside it on its thread, found through the
// launch's correlation id.
void TraceSession::add_collectives(Trace& t,
                                   const std::vector<RecordedCollective>& collectives) const {
  std::vector<std::pair<std::shared_ptr<const CollectiveArgs>, std::size_t>> scopes;
  for (const RecordedCollective& r : collectives) {
    auto args = std::make_shared<CollectiveArgs>();
    args->op = r.c.op;
    args->dtype = r.c.dtype;
    args->in_nelems = r.c.in_nelems;
    args->out_nelems = r.c.out_nelems;
    if (r.c.group) args->group = *r.c.group;
    args->rank = ranks_.rank;
    Span s = Span::cpu_stage(fmt::format("nccl:{}", to_string(r.c.op)), kNoStage, r.step,
                             to_ns(r.begin), to_ns(r.end), pid_, r.tid);
    s.get<StagePayload>().collective = args;
    scopes.emplace_back(std::move(args), t.spans.size());
    t.spans.push_back(std::move(s));
  }
  if (scopes.empty()) return;
  std::unordered_map<std::uint64_t, std::shared_ptr<const CollectiveArgs>> by_correlation;
  for (const Span& l : t.spans) {
    if (l.kind != SpanKind::kLaunch || l.correlation == 0) continue;
    for (const auto& [args, i] : scopes) {
      const Span& c = t.spans[i];
      if (l.pid == c.pid && l.tid == c.tid && l.begin_ns >= c.begin_ns && l.begin_ns <= c.end_ns)
        by_correlation[l.correlation] = args;
    }
  }
  for (Span& k : t.spans)
    if (KernelPayload* kp = k.as<KernelPayload>(); kp && kp->communication)
      if (const auto it = by_correlation.find(k.correlation); it != by_correlation.end())
        kp->collective = it->second;
}

// The loop's part of a window's end: its CPU spans and counters, taken from the preallocated
// arrays (which are reused), and the sources stopped. The rest is hand_over()'s.
TraceSession::Window TraceSession::close_window() {
  Window w;
  Trace& t = w.trace;
  t.spans.reserve(recorded_.size() + fps_.size() + collectives_.size());
  for (const Recorded& r : recorded_) {
    const bool step = r.id == kStepStage;
    t.spans.push_back(Span::cpu_stage(
        step ? fmt::format("ProfilerStep#{}", r.step) : std::string(prof_.stage_name(r.id)), r.id,
        r.step, to_ns(r.begin), to_ns(r.end), pid_, r.tid));
    if (r.engine) {
      const std::string_view clock = prof_.stage_clock(r.id);
      t.spans.back().get<StagePayload>().clock = clock.empty() ? "engine" : std::string(clock);
    }
  }
  for (const auto& [ticks, fps] : fps_)
    t.spans.push_back(Span::counter("FPS", to_ns(ticks), pid_, fps));
  w.collectives.assign(collectives_.begin(), collectives_.end());
  // Ending early (the destructor) the sources are left alone: they stop themselves.
  w.incomplete = incomplete_;
  if (!incomplete_)
    for (auto* s : sources_) s->stop();
  sources_running_ = false;
  w.dropped = dropped_;
  t.ranks = ranks_;
  t.backend = options_.backend;
  t.wall_offset_ns = options_.wall_clock ? wall_offset_ : 0;
  t.base_time_ns = options_.wall_clock ? kTraceBaseTimeNs : 0;
  t.metadata["clock"] = std::string(to_string(prof_.clock().source()));
  w.index = next_window_++;
  t.metadata["window"] = std::to_string(w.index);
  t.metadata["n_envs"] = std::to_string(prof_.n_envs());
  if (incomplete_) {
    t.metadata["incomplete"] = "true";
    t.metadata["active_steps"] = fmt::format("{} of {}", active_steps_, options_.schedule.active);
  }
  recorded_.clear();
  collectives_.clear();
  active_steps_ = 0;
  fps_.clear();
  dropped_ = 0;
  return w;
}

// What can run beside the loop: the sources' spans and header, the handler or the file.
void TraceSession::hand_over(Window& w) {
  Trace& t = w.trace;
  std::uint64_t dropped = w.dropped;
  if (!w.incomplete) {
    for (auto* s : sources_) dropped += s->stop_and_collect(t.spans);
    for (auto* s : sources_) s->describe(t);
  }
  add_collectives(t, w.collectives);
  t.dropped = dropped;
  dropped_total_ += dropped;
  auto log = default_logger();
  if (options_.check_causality) {
    const CausalityReport physics = check_causality(t);
    t.metadata["causality"] = physics.summary();
    if (!physics.ok())
      log->warn("simprof: trace window {} breaks the trace's causality: {}", w.index,
                t.metadata["causality"]);
  }
  if (dropped)
    log->warn("simprof: trace window {}: {} events were dropped (see otherData.dropped_events)",
              w.index, dropped);
  if (ready_ && !w.incomplete) {  // ending early, the handler's captures may be gone: the file
    ready_(t, w.index);
  } else {
    try {
      const std::string path = write(t, w.index);
      log->info("simprof: trace window {}: {} spans -> {}", w.index, t.spans.size(), path);
    } catch (const std::exception& e) {
      log->error("{}", e.what());  // a failed write must not stop the simulation
    }
  }
  windows_.store(w.index + 1, std::memory_order_release);
}

void TraceSession::save() {
  wait();
  Window w = close_window();
  if (!options_.background || w.incomplete) {
    hand_over(w);
    return;
  }
  writer_ = std::thread([this, w = std::move(w)]() mutable {
    try {
      hand_over(w);
    } catch (const std::exception& e) {  // nothing may escape the thread: the window is said lost
      try {
        default_logger()->error("simprof: trace window {} was not handed over: {}", w.index,
                                e.what());
      } catch (...) {
      }
    } catch (...) {
    }
  });
}

}  // namespace simprof
