// SPDX-License-Identifier: MIT
// `simprof compare BASE.json NEW.json [NEW2.json ...]`: its command line and its run (each NEW
// compared with BASE; the exit status is the worst of them). Private to src/compare.
#pragma once

#include <string>
#include <vector>

#include "outcome.hpp"

namespace simprof::compare {

struct CompareArgs {
  std::vector<std::string> files;  // BASE, then each NEW
  CompareOptions options;          // --threshold PCT, --alpha A
  std::string json;                // --json FILE ("-": standard output)
  std::string svg;                 // --svg FILE
  bool help = false;               // -h / --help: `error` holds the usage
};

extern const char* const kCompareUsage;

// argv[0] is "compare". False with `error` set (the usage for --help) when the line is refused.
bool parse_compare_args(int argc, const char* const* argv, CompareArgs& a, std::string& error);

// Parses, compares, prints the table, writes --json and --svg; returns the exit status (0 no
// significant slowdown, 1 slower, 2 not comparable or bad input).
int compare_main(int argc, const char* const* argv);

}  // namespace simprof::compare
