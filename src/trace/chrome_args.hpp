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

/// Microseconds with three decimals from integer nanoseconds, exactly.
void append_us(Buffer& out, std::int64_t ns);
/// The event's args object, as Kineto writes it for the span's kind.
void write_args(Buffer& out, const Span& s);
/// The event's category, as Kineto names it for the span's kind.
std::string_view category(const Span& s);

}  // namespace simprof::chrome
