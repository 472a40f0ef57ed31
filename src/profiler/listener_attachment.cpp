// SPDX-License-Identifier: MIT
// A listener's attachment to a profiler (StepProfiler::attach): either side may go first.
#include <algorithm>
#include <stdexcept>
#include <utility>

#include "simprof/profiler/engine_zones.hpp"
#include "simprof/profiler/step_profiler.hpp"

namespace simprof {

ListenerAttachment StepProfiler::attach(StepListener& listener) {
  if (in_step_) throw std::logic_error("simprof: a listener attached inside a step");
  listeners_.reserve(listeners_.size() + 1);  // both reserved first: nothing below throws
  attachments_.reserve(attachments_.size() + 1);
  listeners_.push_back(&listener);
  ListenerAttachment a(this, &listener);
  attachments_.push_back(&a);
  for (auto* z : zones_) z->listeners_changed();
  return a;  // a move, if not elided, re-points attachments_
}

void StepProfiler::detach(ListenerAttachment* a) noexcept {
  attachments_.erase(std::remove(attachments_.begin(), attachments_.end(), a), attachments_.end());
  const auto at = std::find(listeners_.begin(), listeners_.end(), a->listener_);
  if (at != listeners_.end()) listeners_.erase(at);
  for (auto* z : zones_) z->listeners_changed();
}

ListenerAttachment& ListenerAttachment::operator=(ListenerAttachment&& other) noexcept {
  if (this == &other) return *this;
  detach();
  prof_ = std::exchange(other.prof_, nullptr);
  listener_ = std::exchange(other.listener_, nullptr);
  if (prof_) std::replace(prof_->attachments_.begin(), prof_->attachments_.end(), &other, this);
  return *this;
}

void ListenerAttachment::detach() noexcept {
  if (!prof_) return;
  std::exchange(prof_, nullptr)->detach(this);
  listener_ = nullptr;
}

}  // namespace simprof
