// SPDX-License-Identifier: MIT
// The command lines of simprof's examples and benchmarks (internal: target simprof_cli, not
// installed): one table of flags per program, each flag bound to a field and validated, so every
// program parses, checks and reports the same way.
//
/* clang-format off */
//   Args a;
//   simprof::cli::Flags(kUsage)
//       .ints("--n-envs", a.n_envs, 1)              // a comma-separated list
//       .integer("--frames", a.frames, 1)
//       .real("--tolerance", a.tolerance, 1e-9, 1.0)
//       .choice("--backend", a.backend, {"auto", "cpu", "cuda"})
//       .text("--trace", a.trace)
//       .flag("--timers", a.timers)                 // a switch: sets the field to true
//       .parse(argc, argv);                         // --help: usage, exit 0; bad input: throws
/* clang-format on */
#pragma once

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace simprof::cli {

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

/// One program's flags. Each binds a name to a field; parse() fills them in, or prints the usage
/// and exits 0 for --help/-h, or throws std::invalid_argument naming the flag and the value for a
/// bad value, a missing value or an unknown flag.
class Flags {
 public:
  explicit Flags(std::string usage) : usage_(std::move(usage)) {}

  Flags& integer(const char* name, int& out, int lo, int hi = INT_MAX) {
    return with_value(
        name, [&out, lo, hi, name](const std::string& v) { out = parse_int(name, v, lo, hi); });
  }
  Flags& real(const char* name, double& out, double lo, double hi) {
    return with_value(
        name, [&out, lo, hi, name](const std::string& v) { out = parse_double(name, v, lo, hi); });
  }
  /// A comma-separated list; given twice, the second replaces the first.
  Flags& ints(const char* name, std::vector<int>& out, int lo) {
    return with_value(
        name, [&out, lo, name](const std::string& v) { out = parse_int_list(name, v, lo); });
  }
  Flags& text(const char* name, std::string& out) {
    return with_value(name, [&out](const std::string& v) { out = v; });
  }
  Flags& choice(const char* name, std::string& out, std::initializer_list<const char*> allowed) {
    std::vector<std::string> ok(allowed.begin(), allowed.end());
    return with_value(name, [&out, ok, name](const std::string& v) {
      for (const auto& a : ok)
        if (v == a) {
          out = v;
          return;
        }
      throw std::invalid_argument(
          fmt::format("{} {} (expected one of {})", name, v, fmt::join(ok, ", ")));
    });
  }
  /// Any value type: `parse` turns the text into the field (and throws for a bad value).
  Flags& custom(const char* name, std::function<void(const std::string&)> parse) {
    return with_value(name, std::move(parse));
  }
  /// A switch: sets `out` to `value` when present.
  Flags& flag(const char* name, bool& out, bool value = true) {
    flags_.push_back(Flag{name, false, [&out, value](const std::string&) { out = value; }});
    return *this;
  }

  void parse(int argc, char** argv) const {
    for (int i = 1; i < argc; ++i) {
      const std::string f = argv[i];
      if (f == "--help" || f == "-h") {
        std::fputs(usage_.c_str(), stdout);
        std::exit(0);
      }
      const Flag* match = nullptr;
      for (const auto& g : flags_)
        if (f == g.name) match = &g;
      if (match == nullptr)
        throw std::invalid_argument(fmt::format("unknown flag {} (try --help)", f));
      if (match->takes_value && i + 1 >= argc)
        throw std::invalid_argument(fmt::format("{} needs a value", f));
      match->apply(match->takes_value ? std::string(argv[++i]) : std::string());
    }
  }
  const std::string& usage() const noexcept { return usage_; }

 private:
  struct Flag {
    const char* name;
    bool takes_value;
    std::function<void(const std::string&)> apply;
  };
  Flags& with_value(const char* name, std::function<void(const std::string&)> apply) {
    flags_.push_back(Flag{name, true, std::move(apply)});
    return *this;
  }
  std::string usage_;
  std::vector<Flag> flags_;
};

}  // namespace simprof::cli
