// SPDX-License-Identifier: MIT
#include "simprof/trace/session.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "simprof/base/log.hpp"

#if defined(__linux__)
#include <sys/syscall.h>
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
std::int64_t this_tid() {
#if defined(__linux__)
  return static_cast<std::int64_t>(::syscall(SYS_gettid));
#else
  return 1;
#endif
}
bool recording(ScheduleAction a) {
  return a == ScheduleAction::kRecord || a == ScheduleAction::kRecordAndSave;
}
}  // namespace

TraceSession::TraceSession(StepProfiler& prof, TraceOptions options)
    : prof_(prof), options_(std::move(options)), pid_(this_pid()), tid_(this_tid()) {
  options_.schedule.validate();
  if (options_.max_cpu_events == 0)
    throw std::invalid_argument("simprof: TraceOptions.max_cpu_events = 0 (expected >= 1)");
  spans_.reserve(options_.max_cpu_events);
  open_.resize(prof.num_stages(), 0);
  action_ = options_.schedule.action(0);
  prof_.add_listener(this);
}

TraceSession::~TraceSession() { prof_.remove_listener(this); }

void TraceSession::add_source(TraceSource* source) {
  if (source == nullptr)
    throw std::invalid_argument("simprof: TraceSession::add_source: null source");
  sources_.push_back(source);
}

std::int64_t TraceSession::to_ns(std::int64_t ticks) const noexcept {
  return static_cast<std::int64_t>(
      std::llround(static_cast<double>(ticks) * 1e9 / prof_.clock().ticks_per_second()));
}

void TraceSession::on_step_begin(std::uint64_t, std::int64_t ticks) {
  const ScheduleAction prev =
      index_ > 0 ? options_.schedule.action(index_ - 1) : ScheduleAction::kNone;
  action_ = options_.schedule.action(index_);
  if (action_ != ScheduleAction::kNone && !sources_running_) {
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
  if (spans_.size() < options_.max_cpu_events)
    spans_.push_back(Span{id, static_cast<std::uint64_t>(index_), open_[id], ticks});
  else
    ++dropped_;
}

void TraceSession::on_step_end(std::uint64_t, std::int64_t ticks, StepOutcome) {
  if (recording(action_)) {
    if (spans_.size() < options_.max_cpu_events)
      spans_.push_back(Span{kStepStage, static_cast<std::uint64_t>(index_), step_begin_, ticks});
    else
      ++dropped_;
    if (prof_.fps().num_samples() != fps_samples_seen_) {
      fps_samples_seen_ = prof_.fps().num_samples();
      fps_.emplace_back(ticks, prof_.fps().total_fps());
    }
    if (action_ == ScheduleAction::kRecordAndSave) save(ticks);
  } else {
    fps_samples_seen_ = prof_.fps().num_samples();
  }
  ++index_;
  action_ = options_.schedule.action(index_);
}

void TraceSession::save(std::int64_t) {
  Trace t;
  t.events.reserve(spans_.size() + 16);
  t.events.push_back(TraceEvent::process_name(pid_, "simprof host"));
  t.events.push_back(TraceEvent::thread_name(pid_, tid_, "step loop"));
  for (const Span& s : spans_) {
    const bool step = s.id == kStepStage;
    TraceEvent e = TraceEvent::complete(
        step ? fmt::format("ProfilerStep#{}", s.step) : std::string(prof_.stage_name(s.id)),
        step ? "user_annotation" : "cpu_op", to_ns(s.begin), to_ns(s.end) - to_ns(s.begin), pid_,
        tid_);
    e.args.emplace_back("step", static_cast<std::int64_t>(s.step));
    t.events.push_back(std::move(e));
  }
  for (const auto& [ticks, fps] : fps_)
    t.events.push_back(TraceEvent::counter("FPS", to_ns(ticks), pid_, {{"total", fps}}));
  std::uint64_t dropped = dropped_;
  for (auto* s : sources_) dropped += s->stop_and_collect(t.events);
  sources_running_ = false;
  t.dropped = dropped;
  t.metadata["clock"] = std::string(to_string(prof_.clock().source()));
  t.metadata["window"] = std::to_string(windows_);
  t.metadata["n_envs"] = std::to_string(prof_.n_envs());
  dropped_total_ += dropped;
  auto log = default_logger();
  if (dropped)
    log->warn("simprof: trace window {}: {} events were dropped (see otherData.dropped_events)",
              windows_, dropped);
  if (ready_) {
    ready_(t, windows_);
  } else {
    const std::string path = fmt::format("{}/{}_{}.json", options_.dir, options_.prefix, windows_);
    try {
      write_chrome_trace(t, path);
      files_.push_back(path);
      log->info("simprof: trace window {}: {} events -> {}", windows_, t.events.size(), path);
    } catch (const std::exception& e) {
      log->error("{}", e.what());  // a failed write must not stop the simulation
    }
  }
  spans_.clear();
  fps_.clear();
  dropped_ = 0;
  ++windows_;
}

}  // namespace simprof
