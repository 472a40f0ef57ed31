// SPDX-License-Identifier: MIT
// A program's own ranges that are no stage (another thread's, one between steps) as trace spans of
// their threads: a TraceSource of `simprof run`'s trace windows. It keeps the ranges that close
// while a window records (at most `most`; the rest are counted as lost), each on its OS thread's
// track. Not thread-safe: the caller serialises every call (RangeSession's lock). Private to
// src/run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "simprof/trace/session.hpp"

namespace simprof::run {

class RangeSpans : public TraceSource {
 public:
  explicit RangeSpans(std::size_t most = std::size_t{1} << 16);
  // A range on OS thread `tid` closed: [begin, end) in ticks of the profiler's clock. `name` must
  // outlive the window (RangeSteps's names do: they are kept for the session).
  void add(std::int64_t tid, std::string_view name, std::int64_t begin, std::int64_t end);

  void bind(const TimeBase& time_base) override { time_base_ = time_base; }
  void start() override;
  void discard() override;
  void stop() override { recording_ = false; }
  std::uint64_t stop_and_collect(std::vector<Span>& out) override;
  void abandon() noexcept override;

 private:
  struct Kept {
    std::int64_t tid;
    std::string_view name;
    std::int64_t begin, end;
  };
  std::vector<Kept> kept_;
  std::size_t most_;
  std::uint64_t lost_ = 0;
  bool recording_ = false;
  TimeBase time_base_;
  std::int64_t pid_;
};

}  // namespace simprof::run
