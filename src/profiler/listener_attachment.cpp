// SPDX-License-Identifier: MIT
// A listener's attachment to a profiler (StepProfiler::attach): either side may go first.
#include <algorithm>
#include <stdexcept>
#include <utility>

#include "simprof/profiler/engine_zones.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "zones/state.hpp"

namespace simprof {

namespace {
// What a detached listener's place holds until the list is compacted: callbacks that do nothing.
StepListener& no_listener() noexcept {
  struct None final : StepListener {
    bool wants_worker_zones() const noexcept override { return false; }
  };
  static None none;
  return none;
}
}  // namespace

void StepProfiler::compact_listeners() noexcept {
  listeners_.erase(std::remove(listeners_.begin(), listeners_.end(), &no_listener()),
                   listeners_.end());
  stale_listeners_ = false;
}

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
  if (at != listeners_.end()) {
    if (notifying_ > 0) {  // a callback is walking the list: replaced, erased when the walk ends
      *at = &no_listener();
      stale_listeners_ = true;
    } else {
      listeners_.erase(at);
    }
  }
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
