// SPDX-License-Identifier: MIT
// A benchmark's verdicts ("met" / "MISSED" / "not measured"): each computed from the quantity its
// label names, out of the runs of the same binary and run; a verdict whose input run is missing
// (filtered out, failed, skipped) is "not measured", never "met". Printed where the benchmark
// prints its line, and written as JSON with --verdicts FILE; --check makes the binary exit 1 when a
// verdict was not measured.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace simprof::bench {

/// NaN: the value of a quantity whose input run is missing.
inline constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();

/// a / b where both runs reported (RatioReporter gives -1 for a missing run), else kNotMeasured.
inline double ratio_of(double a, double b) { return a > 0 && b > 0 ? a / b : kNotMeasured; }
/// a - b where both runs reported, else kNotMeasured.
inline double difference_of(double a, double b) { return a > 0 && b > 0 ? a - b : kNotMeasured; }

class Verdicts {
 public:
  enum class Goal { kAtMost, kAtLeast };

  /// Takes --verdicts FILE (or --verdicts=FILE) and --check out of argv, before the benchmark
  /// library sees them.
  void take_flags(int& argc, char** argv) {
    int out = 1;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--check") {
        check_ = true;
      } else if (a == "--verdicts" && i + 1 < argc) {
        file_ = argv[++i];
      } else if (a.rfind("--verdicts=", 0) == 0) {
        file_ = a.substr(std::strlen("--verdicts="));
      } else {
        argv[out++] = argv[i];
      }
    }
    argc = out;
  }

  /// The verdict on `quantity` (its value in `unit`, kNotMeasured when an input is missing)
  /// against `target`: "met", "MISSED" or "not measured".
  const char* judge(const std::string& name, const std::string& quantity, double value,
                    const std::string& unit, Goal goal, double target) {
    const char* status = std::isnan(value) ? "not measured"
                         : (goal == Goal::kAtMost ? value <= target : value >= target) ? "met"
                                                                                       : "MISSED";
    nlohmann::json v = {{"name", name},     {"quantity", quantity},
                        {"unit", unit},     {"goal", goal == Goal::kAtMost ? "<=" : ">="},
                        {"target", target}, {"status", status}};
    v["value"] = std::isnan(value) ? nlohmann::json(nullptr) : nlohmann::json(value);
    verdicts_.push_back(std::move(v));
    return status;
  }

  /// Writes the JSON file (if asked) and returns the exit code: 1 when --check and a verdict was
  /// not measured (each named on stderr), or the file could not be written.
  int finish() const {
    int rc = 0;
    if (!file_.empty()) {
      std::ofstream f(file_);
      f << nlohmann::json{{"verdicts", verdicts_}}.dump(2) << "\n";
      if (!f) {
        std::fprintf(stderr, "verdicts: cannot write %s\n", file_.c_str());
        rc = 1;
      }
    }
    if (check_)
      for (const auto& v : verdicts_)
        if (v["status"] == "not measured") {
          std::fprintf(stderr, "verdict '%s' not measured: an input run is missing\n",
                       v["name"].get<std::string>().c_str());
          rc = 1;
        }
    return rc;
  }

 private:
  std::vector<nlohmann::json> verdicts_;
  std::string file_;
  bool check_ = false;
};

}  // namespace simprof::bench
