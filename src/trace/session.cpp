// SPDX-License-Identifier: MIT
#include "simprof/trace/session.hpp"

#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "simprof/base/log.hpp"
#include "simprof/trace/chrome_json.hpp"

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
    : prof_(prof),
      options_(std::move(options)),
      time_base_(prof.clock()),
      pid_(this_pid()),
      tid_(this_tid()) {
  options_.schedule.validate();
  if (options_.max_cpu_events == 0)
    throw std::invalid_argument("simprof: TraceOptions.max_cpu_events = 0 (expected >= 1)");
  recorded_.reserve(options_.max_cpu_events);
  open_.resize(prof.num_stages(), 0);
  action_ = options_.schedule.action(0);
  prof_.add_listener(this);
}

TraceSession::~TraceSession() { prof_.remove_listener(this); }

void TraceSession::add_source(TraceSource* source) {
  if (source == nullptr)
    throw std::invalid_argument("simprof: TraceSession::add_source: null source");
  source->bind(time_base_);
  sources_.push_back(source);
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
  if (recorded_.size() < options_.max_cpu_events)
    recorded_.push_back(Recorded{id, static_cast<std::uint64_t>(index_), open_[id], ticks});
  else
    ++dropped_;
}

void TraceSession::on_step_end(std::uint64_t, std::int64_t ticks, StepOutcome) {
  if (recording(action_)) {
    if (recorded_.size() < options_.max_cpu_events)
      recorded_.push_back(
          Recorded{kStepStage, static_cast<std::uint64_t>(index_), step_begin_, ticks});
    else
      ++dropped_;
    if (prof_.fps().num_samples() != fps_samples_seen_) {
      fps_samples_seen_ = prof_.fps().num_samples();
      fps_.emplace_back(ticks, prof_.fps().total_fps());
    }
    if (action_ == ScheduleAction::kRecordAndSave) save();
  } else {
    fps_samples_seen_ = prof_.fps().num_samples();
  }
  ++index_;
  action_ = options_.schedule.action(index_);
}

void TraceSession::save() {
  Trace t;
  t.spans.reserve(recorded_.size() + fps_.size());
  for (const Recorded& r : recorded_) {
    const bool step = r.id == kStepStage;
    t.spans.push_back(Span::cpu_stage(
        step ? fmt::format("ProfilerStep#{}", r.step) : std::string(prof_.stage_name(r.id)), r.id,
        r.step, to_ns(r.begin), to_ns(r.end), pid_, tid_));
  }
  for (const auto& [ticks, fps] : fps_)
    t.spans.push_back(Span::counter("FPS", to_ns(ticks), pid_, fps));
  std::uint64_t dropped = dropped_;
  for (auto* s : sources_) dropped += s->stop_and_collect(t.spans);
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
      log->info("simprof: trace window {}: {} spans -> {}", windows_, t.spans.size(), path);
    } catch (const std::exception& e) {
      log->error("{}", e.what());  // a failed write must not stop the simulation
    }
  }
  recorded_.clear();
  fps_.clear();
  dropped_ = 0;
  ++windows_;
}

}  // namespace simprof
