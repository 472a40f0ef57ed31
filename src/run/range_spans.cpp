// SPDX-License-Identifier: MIT
#include "range_spans.hpp"

#include <unistd.h>

#include <string>

namespace simprof::run {

RangeSpans::RangeSpans(std::size_t most) : most_(most), pid_(::getpid()) {}

void RangeSpans::add(std::int64_t tid, std::string_view name, std::int64_t begin,
                     std::int64_t end) {
  if (!recording_) return;
  if (kept_.size() < most_)
    kept_.push_back(Kept{tid, name, begin, end});
  else
    ++lost_;
}

void RangeSpans::start() {
  kept_.reserve(most_);  // at the first window: nothing is held without --trace-steps
  kept_.clear();
  lost_ = 0;
  recording_ = true;
}

void RangeSpans::discard() {
  kept_.clear();
  lost_ = 0;
}

std::uint64_t RangeSpans::stop_and_collect(std::vector<Span>& out) {
  recording_ = false;
  for (const Kept& k : kept_)
    out.push_back(Span::range(std::string(k.name), time_base_.to_ns(k.begin),
                              time_base_.to_ns(k.end), pid_, k.tid));
  kept_.clear();
  const std::uint64_t lost = lost_;
  lost_ = 0;
  return lost;
}

void RangeSpans::abandon() noexcept {
  recording_ = false;
  kept_.clear();
  lost_ = 0;
}

}  // namespace simprof::run
