// SPDX-License-Identifier: MIT
// Private to the kernel tracer: which CUPTI records are a trace window's, by correlation id. Plain
// C++ (no CUPTI), so that the core tests check its arithmetic.
#pragma once

#include <cstdint>

namespace simprof::cuda::detail {

/// The work that belongs to a trace window: launched strictly between two correlation marks (the
/// window's start and its last step's end, see correlation_mark()), in CUPTI's sequence, which
/// wraps at 2^32; 0 is no correlation. Records launched before the window (warm-up kernels still
/// running) or after it (the loop's next steps, traced until the window is collected) are not the
/// window's. Device work CUPTI gives no correlation belongs by where it ran: the kernels of a
/// conditional node's body (on a stream of their own, with their graph's id) to the window's launch
/// of that graph they began in (from its first begin to the next numbered work on its stream), and
/// are given its correlation; other work when it began on a stream of the window's own work, after
/// that work's first begin and before the first begin of later work there. `all`: no marks (CUPTI
/// numbered nothing), every record is kept. CUPTI's overhead records carry no correlation: kept
/// when they began between `from_ns` and `until_ns` (the session's clock, at the marks).
struct CorrelationWindow {
  std::uint32_t after = 0, before = 0;
  std::int64_t from_ns = 0, until_ns = 0;
  bool all = true;
  bool contains(std::uint32_t c) const noexcept {
    return all || (c != 0 && static_cast<std::uint32_t>(c - after - 1) <
                                 static_cast<std::uint32_t>(before - after - 1));
  }
  /// Launched at or after the window's last mark.
  bool later(std::uint32_t c) const noexcept {
    return !all && c != 0 && static_cast<std::int32_t>(c - before) >= 0;
  }
};

}  // namespace simprof::cuda::detail
