// SPDX-License-Identifier: MIT
// Files simprof writes (traces, SVG plots) appear whole or not at all.
//
/* clang-format off */
//   simprof::write_file_atomic("timers.svg", simprof::timers_svg(stats));
/* clang-format on */
#pragma once

#include <string>
#include <string_view>

namespace simprof {

/// Writes text to `path` atomically (a temporary file, then rename). Throws std::runtime_error
/// naming the path and the reason.
void write_file_atomic(const std::string& path, std::string_view text);

}  // namespace simprof
