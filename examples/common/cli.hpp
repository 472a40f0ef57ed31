// SPDX-License-Identifier: MIT
// Command-line helpers shared by the examples.
#pragma once

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

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

/// `v` as a double in [lo, hi]; std::invalid_argument naming the flag, the value and the range
/// otherwise.
inline double parse_double(const std::string& flag, const std::string& v, double lo, double hi) {
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || !(x >= lo && x <= hi))
    throw std::invalid_argument(
        fmt::format("{} {} (expected a number in [{}, {}])", flag, v, lo, hi));
  return x;
}

/// A comma-separated list of ints >= lo ("1024,4096"); std::invalid_argument naming the flag and
/// the bad item otherwise.
inline std::vector<int> parse_int_list(const std::string& flag, const std::string& v, int lo) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= v.size()) {
    const std::size_t comma = v.find(',', start);
    const std::string part =
        v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    out.push_back(parse_int(flag, part, lo));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

/// The value after flag argv[i] (advancing i); std::invalid_argument when it is missing.
inline std::string flag_value(int& i, int argc, char** argv) {
  if (i + 1 >= argc) throw std::invalid_argument(fmt::format("{} needs a value", argv[i]));
  return argv[++i];
}

/// The end of a flag loop: --help / -h prints `usage` and exits 0; anything else is an unknown
/// flag (std::invalid_argument naming it).
[[noreturn]] inline void help_or_unknown_flag(const std::string& flag, const char* usage) {
  if (flag == "--help" || flag == "-h") {
    std::fputs(usage, stdout);
    std::exit(0);
  }
  throw std::invalid_argument(fmt::format("unknown flag {} (try --help)", flag));
}

}  // namespace simprof::examples
