// SPDX-License-Identifier: MIT
// Private to src/trace: the track each host span is written on. Perfetto and Holistic Trace
// Analysis read a host thread's complete events as one call stack, so they must nest. Every span
// simprof makes nests by construction, except a program's own ranges (SpanKind::kRange): NVTX's
// start/end ranges and another domain's pushes need not. A range that would cross a span of its
// thread goes to an overflow track of that thread, one range after another.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "simprof/trace/span.hpp"

namespace simprof::chrome {

/// Overflow track k (1, 2, ...) of thread `tid` is written as tid + k * kLaneStride: above every
/// Linux thread id (PID_MAX_LIMIT is 2^22) and, for k < kMostLanes, below 2^32 (Perfetto reads a
/// tid as a uint32 and puts a larger one on the process's main thread).
inline constexpr std::int64_t kLaneStride = std::int64_t{1} << 22;
inline constexpr std::size_t kMostLanes = 1000;  ///< ranges past it share the last overflow track

/// The tid each span of `trace` is written with (in the order of trace.spans): its own, or an
/// overflow track's for a range that would not nest. Device spans, flows and counters keep theirs.
std::vector<std::int64_t> host_tids(const Trace& trace);

}  // namespace simprof::chrome
