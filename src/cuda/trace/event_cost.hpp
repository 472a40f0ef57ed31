// SPDX-License-Identifier: MIT
// What LaunchScopes's events cost a stream (EventCost): measured on `device` (current) the first
// time it is asked for and kept for the process (event_cost.cu; throws CudaError), and what a
// scope's events cost (CUDA-free: test_stamp_math tests it). Private to src/cuda/trace.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "simprof/cuda/trace/launch_scopes.hpp"

namespace simprof::cuda::detail {

EventCost event_cost(int device);

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

}  // namespace simprof::cuda::detail
