// SPDX-License-Identifier: MIT
#include "simprof/profiler/device_steps.hpp"

#include <cmath>
#include <utility>

namespace simprof {

DeviceSteps::DeviceSteps(StepProfiler& prof, bool feed_fps, std::string who)
    : prof_(prof), feed_fps_(feed_fps) {
  if (feed_fps_) fps_clock_ = prof_.fps().claim_device_clock(std::move(who));
}

const DeviceStep& DeviceSteps::add(std::uint64_t step, bool completed, double step_s,
                                   double since_previous_end_s, bool rebased) {
  const bool next = have_previous_ && step == latest_.step + 1 && !rebased;
  if (have_previous_ && step > latest_.step + 1) missed_ += step - latest_.step - 1;
  if (rebased && std::isfinite(since_previous_end_s)) {
    // A clock that begins at this step's start: the FPS sample starts there, this step ends it.
    clock_ns_ = since_previous_end_s * 1e9;
    clock_valid_ = true;
    if (feed_fps_) {
      prof_.fps().restart();
      prof_.fps().tick(0);
    }
  } else if (next && clock_valid_ && std::isfinite(since_previous_end_s)) {
    // The running device clock goes on only from the step just before; a gap loses it.
    clock_ns_ += since_previous_end_s * 1e9;
  } else {
    clock_ns_ = 0;
    clock_valid_ = true;
    if (feed_fps_) prof_.fps().restart();
  }
  DeviceStep d;
  d.step = step;
  d.group_end = step;
  d.completed = completed;
  d.step_s = step_s;
  d.end_ns = static_cast<std::int64_t>(std::llround(clock_ns_));
  if (next && latest_.completed && completed && std::isfinite(since_previous_end_s)) {
    d.period_s = since_previous_end_s;
    period_sum_ += d.period_s;
    ++periods_;
  }
  if (completed) {
    if (std::isfinite(step_s)) {
      step_sum_ += step_s;
      ++spans_;
    }
    ++completed_;
    if (feed_fps_) prof_.fps().tick(d.end_ns);
  } else if (feed_fps_) {
    prof_.fps().restart();  // as the host does for a vetoed step: it is not counted, nor its time
  }
  latest_ = d;
  have_previous_ = true;
  ++added_;
  return latest_;
}

void DeviceSteps::flush() {
  if (feed_fps_ && have_previous_) prof_.fps().flush(latest_.end_ns);
}

double DeviceSteps::mean_step_s() const noexcept {
  return spans_ ? step_sum_ / static_cast<double>(spans_) : DeviceStep::kNone;
}

double DeviceSteps::mean_period_s() const noexcept {
  return periods_ ? period_sum_ / static_cast<double>(periods_) : DeviceStep::kNone;
}

}  // namespace simprof
