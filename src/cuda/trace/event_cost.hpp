// SPDX-License-Identifier: MIT
// What LaunchScopes's events cost a stream (EventCost): measured on `device` (current) the first
// time it is asked for and kept for the process (event_cost.cu; never throws: a failure or an
// implausible result leaves it not measured, and why_not says why), and what a scope's events
// cost (CUDA-free: test_stamp_math tests it). Private to src/cuda/trace.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "simprof/cuda/trace/launch_scopes.hpp"

namespace simprof::cuda::detail {

EventCost event_cost(int device) noexcept;

// The cost of a scope's events on its `streams` streams (`begin[k]`, `end[k]`: their numbers, in
// the order the window recorded them) and of the events recorded between them (its nested
// scopes'). 0 where an end is missing (-1).
inline std::int64_t events_ns(const int* begin, const int* end, std::size_t streams,
                              const EventCost& cost) noexcept {
  if (streams == 0) return 0;
  int first = begin[0], last = -1;
  for (std::size_t k = 0; k < streams; ++k) {
    if (end[k] < 0) return 0;
    first = std::min(first, begin[k]);
    last = std::max(last, end[k]);
  }
  const auto own = static_cast<int>(2 * streams);
  const int nested = std::max(0, last - first + 1 - own);
  return std::llround(cost.pair_ns + nested * cost.inside_ns);
}

// A scope's work is never less than that of a scope nested in it (its span holds theirs): where
// the nested events' cost would take it below, less is taken off. `scopes` in the order they
// opened, each with its depth (a scope's parent: the nearest earlier one a level up).
inline void keep_nested_inside(std::vector<ScopeTiming>& scopes) {
  std::vector<std::ptrdiff_t> parent(scopes.size(), -1), open;
  for (std::size_t i = 0; i < scopes.size(); ++i) {
    while (!open.empty() && scopes[static_cast<std::size_t>(open.back())].depth >= scopes[i].depth)
      open.pop_back();
    if (!open.empty()) parent[i] = open.back();
    open.push_back(static_cast<std::ptrdiff_t>(i));
  }
  for (std::size_t i = scopes.size(); i-- > 0;) {  // the deepest first: a child's work is final
    if (parent[i] < 0 || !scopes[i].launched) continue;
    ScopeTiming& p = scopes[static_cast<std::size_t>(parent[i])];
    if (!p.launched) continue;
    const std::int64_t room = p.end_ns - p.begin_ns - scopes[i].work_ns();
    p.events_ns = std::max<std::int64_t>(0, std::min(p.events_ns, room));
  }
}

}  // namespace simprof::cuda::detail
