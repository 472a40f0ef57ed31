// SPDX-License-Identifier: MIT
#include "range_device.hpp"

#include <exception>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "simprof/profiler/report.hpp"
#include "simprof/trace/analysis.hpp"

namespace simprof::run {

RangeDevice::RangeDevice(StepProfiler& prof, GpuMode mode, Sampling sampling)
    : prof_(prof), mode_(mode), sampling_(sampling) {
  if (mode_ == GpuMode::kOn && !built_with_cuda()) make_device_side(prof_, sampling_, {}, off_);
}

RangeDevice::~RangeDevice() = default;

void RangeDevice::step(TraceSession* traced) noexcept {
  if (mode_ == GpuMode::kOff || !off_.empty()) return;
  try {
    if (!side_) {
      // Until the program starts CUDA (a CPU program never does: no context is made for it).
      if (checked_++ % 8 == 0 && has_cuda_context()) start();
      if (!side_) return;
    }
    if (restart_) {  // the step range changed: its figures anew
      restart_ = false;
      side_->leave_trace();
      trace_joined_ = trace_done_ = false;
      {
        const std::lock_guard<std::mutex> lock(mu_);
        table_.clear();
      }
      prof_.fps().restart();
    }
    trace_window(traced);
  } catch (const std::exception& e) {  // never into the program's NVTX call: the device side stops
    off_ = e.what();
    side_.reset();
    fps_.release();
  }
}

void RangeDevice::start() {
  side_ = make_device_side(
      prof_, sampling_, [this](const TraceAnalysis& a) { window(a); }, off_);
  if (side_) {  // kept for the report and the record, whether or not the side can run
    launches_ = side_->launches();
    hook_unused_ = side_->hook_unused_reason();
    if (hook_unused_.empty() && launches_ == "cupti") hook_unused_ = sampling_.hook_unused;
    event_cost_ = side_->event_cost();
  }
  if (side_ && !side_->disabled_reason().empty()) off_ = side_->disabled_reason();
  if (!off_.empty()) side_.reset();
}

void RangeDevice::trace_window(TraceSession* traced) {
  if (traced == nullptr || trace_done_) return;
  if (!trace_joined_ && (traced->action() != ScheduleAction::kNone || traced->windows() > 0)) {
    // It began (or ended) before the device side started.
    trace_late_ = true;
    trace_done_ = true;
    return;
  }
  if (traced->windows() > 0) {  // written: sampling again
    side_->leave_trace();
    side_->pause(false);
    trace_done_ = true;
    return;
  }
  if (!trace_joined_ && traced->action() == ScheduleAction::kNone) {
    side_->join_trace(*traced);
    trace_joined_ = true;
  }
  side_->pause(traced->action() != ScheduleAction::kNone);  // the next step is the window's
}

void RangeDevice::window(const TraceAnalysis& steps) {
  const std::lock_guard<std::mutex> lock(mu_);
  const auto progress = table_.add(steps);
  if (!progress) return;
  // The FPS line goes over to the GPU's clock at the first device step end read (until then, and
  // in a program whose steps launch nothing on the step's thread, it stays on the host's).
  if (!fps_) fps_ = prof_.fps().claim_device_clock("simprof run --gpu");
  prof_.fps().advance(progress->end_ns, progress->steps);
}

void RangeDevice::finish() noexcept {
  if (side_) side_->poll();  // the windows the GPU has passed since the last step began
}

void RangeDevice::restart() noexcept { restart_ = side_ != nullptr; }

std::string RangeDevice::report() const {
  if (mode_ == GpuMode::kOff) return "";
  const std::string why_cupti =
      hook_unused_.empty()
          ? ""
          : fmt::format("simprof run: launches seen through CUPTI, not the launch hook: {}.\n",
                        hook_unused_);
  if (!off_.empty()) return why_cupti + fmt::format("simprof run: no device times: {}.\n", off_);
  std::string late;
  if (trace_late_)
    late =
        "simprof run: --trace-steps: the window began before the program started CUDA on the "
        "step's thread, so it has no kernels.\n";
  if (side_ && !side_->disabled_reason().empty())
    late += fmt::format("simprof run: device sampling stopped: {}.\n", side_->disabled_reason());
  late += why_cupti;
  if (!side_)
    return mode_ == GpuMode::kOn
               ? "simprof run: --gpu: the program never started CUDA on the step's thread, so "
                 "there are no device times.\n"
               : "";
  const std::lock_guard<std::mutex> lock(mu_);
  const std::vector<StageRow> rows = table_.rows();
  const std::string schedule = sampling_.interval_ms > 0
                                   ? fmt::format("2 in every {}, a window in {} ms at most",
                                                 sampling_.every, sampling_.interval_ms)
                                   : fmt::format("2 in every {}", sampling_.every);
  const char* seen = launches_ == "hook" ? "the launch hook" : "CUPTI";
  const std::string events =
      event_cost_.measured
          ? fmt::format("less its events' cost: {:.2f} us a range, {:.2f} us an event nested in it",
                        event_cost_.pair_ns * 1e-3, event_cost_.inside_ns * 1e-3)
          : fmt::format("its events' cost not taken off: {}", event_cost_.why_not);
  if (rows.empty())
    return late + fmt::format(
                      "simprof run: device clock: no sampled step launched a kernel on the step's "
                      "thread ({} windows read: {}, launches seen through {}).\n",
                      table_.windows(), schedule, seen);
  return late +
         fmt::format(
             "simprof run: {} sampled steps on the GPU's clock ({}, launches seen through {}: "
             "each range from the end of the work before it on its streams to the end of its "
             "own, {})\n",
             table_.sampled(), schedule, seen, events) +
         format_stage_rows(rows);
}

record::Json RangeDevice::json() const {
  using record::Json;
  if (mode_ == GpuMode::kOff) return Json(nullptr);
  const std::lock_guard<std::mutex> lock(mu_);
  return Json{{"clock", "device"},
              {"on", side_ != nullptr},
              {"off_reason", off_.empty() ? Json(nullptr) : Json(off_)},
              {"launches", launches_.empty() ? Json(nullptr) : Json(launches_)},
              {"hook_unused", hook_unused_.empty() ? Json(nullptr) : Json(hook_unused_)},
              {"event_cost_ns", event_cost_.measured ? Json{{"pair", event_cost_.pair_ns},
                                                            {"inside", event_cost_.inside_ns}}
                                                     : Json(nullptr)},
              {"sample_every", sampling_.every},
              {"interval_ms", sampling_.interval_ms},
              {"windows", table_.windows()},
              {"sampled_steps", table_.sampled()},
              {"steps_without_kernels", table_.without_kernels()},
              {"skipped_windows", side_ ? side_->skipped() : 0},
              {"dropped", side_ ? side_->dropped() : 0},
              {"capturing_launches", side_ ? side_->capturing_launches() : 0},
              {"fps_clock", fps_ ? "device" : "host"},
              {"fps_per_env", prof_.fps().fps_per_env()},
              {"steps_per_s", table_.steps_per_second()},
              {"stages", record::stage_rows_json(table_.rows())}};
}

}  // namespace simprof::run
