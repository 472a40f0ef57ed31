// SPDX-License-Identifier: MIT
// `simprof compare BASE NEW`: every series of every run compared (statistics.hpp), what could not
// be, and the exit status CI reads: 0 no significant slowdown, 1 a slowdown past the threshold,
// 2 not comparable or bad input. Private to src/compare.
#pragma once

#include <string>
#include <vector>

#include "record.hpp"
#include "statistics.hpp"

namespace simprof::compare {

/// How changes are judged.
struct CompareOptions {
  double alpha = 0.05;      ///< the test's significance level
  double threshold = 0.02;  ///< the least change of the median reported (0.02: 2 %)
};

/// One series of both runs, compared.
struct Row {
  std::string clock, name;
  int depth = 0;
  bool larger_is_slower = true;
  std::vector<double> base, changed;  ///< the samples, for the picture
  double base_p50 = 0, base_p95 = 0, new_p50 = 0, new_p95 = 0;
  Comparison result;
  /// kSlower / kFaster as the user reads it: for a rate, a drop is slower.
  Verdict verdict() const noexcept { return result.verdict; }
};

/// One workload's rows.
struct RunResult {
  std::string label;
  std::vector<Row> rows;
};

/// One comparison of BASE with one NEW.
struct Outcome {
  std::string base, changed;                ///< the records' names
  std::vector<std::string> not_comparable;  ///< what differs in what matters
  std::vector<std::string> bad_input;       ///< a stage in one run only, too few samples
  std::vector<std::string> notes;           ///< the FPS rate left out (too few samples)
  std::vector<RunResult> runs;
  /// 2 not comparable or bad input, 1 a row slower, 0 otherwise.
  int status() const noexcept;
};

/// Compares every series the two records share; never throws for what the records hold (that is
/// named in not_comparable / bad_input).
Outcome compare_records(const Record& base, const Record& changed, const CompareOptions& options);

/// The terminal's table: one block per run, a row per series, then the verdict.
std::string format_outcome(const Outcome& outcome, const CompareOptions& options);

/// --json: the outcomes, their rows (medians, p95s, change and interval, p, verdict) and status.
Json outcomes_json(const std::vector<Outcome>& outcomes, const CompareOptions& options);

}  // namespace simprof::compare
