// SPDX-License-Identifier: MIT
// Command-line helpers shared by the examples.
#pragma once

#include <climits>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace simprof::examples {

/// `v` as an int in [lo, hi]; std::invalid_argument naming the flag, the value and the range
/// otherwise.
inline int parse_int(const std::string& flag, const std::string& v, int lo, int hi = INT_MAX) {
  std::size_t used = 0;
  int x = 0;
  try {
    x = std::stoi(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || x < lo || x > hi)
    throw std::invalid_argument(
        hi == INT_MAX ? fmt::format("{} {} (expected an integer >= {})", flag, v, lo)
                      : fmt::format("{} {} (expected an integer in [{}, {}])", flag, v, lo, hi));
  return x;
}

}  // namespace simprof::examples
