// SPDX-License-Identifier: MIT
// Private to src/trace: what the Chrome (Kineto) writer puts in an event's "args" and "cat" for
// each kind of span, and its exact microseconds. Kineto's field names live here, where they are
// written.
#pragma once

#include <cstdint>
#include <string_view>

#include <fmt/format.h>

#include "simprof/trace/span.hpp"

namespace simprof::chrome {

using Buffer = fmt::memory_buffer;

/// Written on a device's track (pid = device, tid = stream): kernels, copies, memsets, syncs.
inline bool on_device_track(SpanKind k) {
  return k == SpanKind::kKernel || k == SpanKind::kMemcpy || k == SpanKind::kMemset ||
         k == SpanKind::kSync;
}
/// Written as a complete event on a host thread's track (flows and counters are not).
inline bool on_host_track(SpanKind k) {
  return !on_device_track(k) && k != SpanKind::kFlow && k != SpanKind::kCounter;
}

/// Microseconds with three decimals from integer nanoseconds, exactly.
void append_us(Buffer& out, std::int64_t ns);
/// The event's args object, as Kineto writes it for the span's kind.
void write_args(Buffer& out, const Span& s);
/// The event's category, as Kineto names it for the span's kind.
std::string_view category(const Span& s);

}  // namespace simprof::chrome
