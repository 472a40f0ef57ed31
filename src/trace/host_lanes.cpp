// SPDX-License-Identifier: MIT
#include "host_lanes.hpp"

#include "chrome_args.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace simprof::chrome {

namespace {

// One thread's spans (indices into `spans`), in order: the ranges that cannot nest there.
std::vector<std::size_t> crossing(const std::vector<Span>& spans, std::vector<std::size_t>& track) {
  const auto range = [&](std::size_t i) { return spans[i].kind == SpanKind::kRange; };
  // Outer spans first: by begin, the longer first, and a range around an equal span.
  std::sort(track.begin(), track.end(), [&](std::size_t a, std::size_t b) {
    const Span &x = spans[a], &y = spans[b];
    if (x.begin_ns != y.begin_ns) return x.begin_ns < y.begin_ns;
    if (x.end_ns != y.end_ns) return x.end_ns > y.end_ns;
    return range(a) && !range(b);
  });
  std::vector<std::size_t> open, out;
  for (const std::size_t i : track) {
    const Span& s = spans[i];
    while (!open.empty() && spans[open.back()].end_ns <= s.begin_ns) open.pop_back();
    if (range(i) && !open.empty() && spans[open.back()].end_ns < s.end_ns) {
      out.push_back(i);  // it would cross the span it began in
      continue;
    }
    // A span of simprof's own that a range would cross: the range goes (the span stays, and a
    // span of ours crossing another of ours is left for the checks to find).
    while (!range(i) && !open.empty() && spans[open.back()].end_ns < s.end_ns &&
           range(open.back())) {
      out.push_back(open.back());
      open.pop_back();
    }
    open.push_back(i);
  }
  return out;
}

}  // namespace

std::vector<std::int64_t> host_tids(const Trace& trace) {
  const std::vector<Span>& spans = trace.spans;
  std::vector<std::int64_t> tids(spans.size());
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::size_t>> tracks;
  bool ranges = false;
  for (std::size_t i = 0; i < spans.size(); ++i) {
    tids[i] = spans[i].tid;
    ranges = ranges || spans[i].kind == SpanKind::kRange;
    if (on_host_track(spans[i].kind)) tracks[{spans[i].pid, spans[i].tid}].push_back(i);
  }
  if (!ranges) return tids;
  for (auto& [track, members] : tracks) {
    std::vector<std::size_t> moved = crossing(spans, members);
    std::sort(moved.begin(), moved.end(),
              [&](std::size_t a, std::size_t b) { return spans[a].begin_ns < spans[b].begin_ns; });
    std::vector<std::int64_t> lane_end;  // each overflow track's last end
    for (const std::size_t i : moved) {
      std::size_t lane = 0;
      while (lane < lane_end.size() && lane_end[lane] > spans[i].begin_ns) ++lane;
      if (lane == kMostLanes)
        lane = kMostLanes - 1;  // thousands of ranges open at once: they cross
      if (lane == lane_end.size()) lane_end.push_back(0);
      lane_end[lane] = spans[i].end_ns;
      tids[i] = track.second + static_cast<std::int64_t>(lane + 1) * kLaneStride;
    }
  }
  return tids;
}

}  // namespace simprof::chrome
