// SPDX-License-Identifier: MIT
#include "compare_cli.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "svg.hpp"

namespace simprof::compare {

const char* const kCompareUsage =
    "usage: simprof compare [--threshold PCT] [--alpha A] [--json FILE] [--svg FILE] BASE.json "
    "NEW.json [NEW2.json ...]\n"
    "  Compares run records (--json of simprof run, the examples, write_run_record): per stage,\n"
    "  host and device, and the FPS rate, the median and p95 of both, the change of the median\n"
    "  with its 95 % interval, and a two-sided Mann-Whitney U test. A change is reported only\n"
    "  where the test says so (p < alpha) and it exceeds the threshold. Each NEW is compared\n"
    "  with BASE.\n"
    "  --threshold PCT  the least change reported, in percent (default 2)\n"
    "  --alpha A    the test's significance level (default 0.05)\n"
    "  --json FILE  the comparison for machines ('-': standard output, instead of the table)\n"
    "  --svg FILE   a picture of every stage's distributions, base and new side by side\n"
    "  Exit status: 0 no significant slowdown, 1 a slowdown past the threshold, 2 not comparable\n"
    "  (another GPU, build type or workload) or bad input.";

namespace {

bool parse_number(const std::string& text, double& out) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || *end != 0 || !std::isfinite(v)) return false;
  out = v;
  return true;
}

bool parse_value(const std::string& arg, const std::string& v, CompareArgs& a, std::string& error) {
  double x = 0;
  if (arg == "--threshold") {
    if (!parse_number(v, x) || x < 0 || x >= 100) {
      error = "simprof compare: --threshold '" + v + "' (expected a percentage, 0 <= PCT < 100)";
      return false;
    }
    a.options.threshold = x / 100;
  } else if (arg == "--alpha") {
    if (!parse_number(v, x) || x <= 0 || x >= 1) {
      error = "simprof compare: --alpha '" + v + "' (expected a number, 0 < A < 1)";
      return false;
    }
    a.options.alpha = x;
  } else {
    if (v.empty()) {
      error = "simprof compare: " + arg + " '' (expected a file to write)";
      return false;
    }
    (arg == "--json" ? a.json : a.svg) = v;
  }
  return true;
}

void write_file(const std::string& option, const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fputs(text.c_str(), stdout);
    return;
  }
  std::ofstream out(path, std::ios::out | std::ios::trunc);
  out << text;
  out.flush();
  if (!out) throw BadInput(fmt::format("{} {}: cannot write it", option, path));
}

}  // namespace

bool parse_compare_args(int argc, const char* const* argv, CompareArgs& a, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      a.help = true;
      error = kCompareUsage;
      return false;
    }
    if (arg == "--threshold" || arg == "--alpha" || arg == "--json" || arg == "--svg") {
      if (i + 1 >= argc) {
        error = "simprof compare: " + arg + " needs a value";
        return false;
      }
      if (!parse_value(arg, argv[++i], a, error)) return false;
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-') {
      error = "simprof compare: unknown option '" + arg + "'\n" + kCompareUsage;
      return false;
    }
    a.files.push_back(arg);
  }
  if (a.json == "-" && a.svg == "-") {
    error = "simprof compare: --json - and --svg - both on standard output (expected one)";
    return false;
  }
  if (a.files.size() < 2) {
    error = fmt::format("simprof compare: {} run record{} given (expected BASE.json NEW.json)\n{}",
                        a.files.size(), a.files.size() == 1 ? "" : "s", kCompareUsage);
    return false;
  }
  return true;
}

int compare_main(int argc, const char* const* argv) {
  CompareArgs a;
  std::string error;
  if (!parse_compare_args(argc, argv, a, error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return a.help ? 0 : 2;
  }
  try {
    std::vector<Record> records;
    for (const std::string& f : a.files) records.push_back(load_record(f));
    std::vector<Outcome> outcomes;
    int status = 0;
    for (std::size_t i = 1; i < records.size(); ++i) {
      outcomes.push_back(compare_records(records[0], records[i], a.options));
      status = std::max(status, outcomes.back().status());
      if (a.json != "-") std::fputs(format_outcome(outcomes.back(), a.options).c_str(), stdout);
    }
    if (!a.json.empty()) {
      const Json doc = outcomes_json(outcomes, a.options);
      write_file("--json", a.json, doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
    }
    if (!a.svg.empty()) write_file("--svg", a.svg, distributions_svg(outcomes));
    return status;
  } catch (const std::exception& e) {  // BadInput names the file; anything else is bad input too
    std::fprintf(stderr, "simprof compare: %s\n", e.what());
    return 2;
  }
}

}  // namespace simprof::compare
