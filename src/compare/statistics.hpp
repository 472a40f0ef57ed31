// SPDX-License-Identifier: MIT
// `simprof compare`'s statistics (issue 44): did a stage's per-step times change between two runs?
// A two-sided Mann-Whitney U test (as Google Benchmark's compare.py and asv use: no assumption of
// normal times, robust to the long tail a step time has), the change of the median with a
// bootstrap confidence interval, and the verdict: a change is reported only where the test says so
// *and* it exceeds the threshold. Private to src/compare.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace simprof::compare {

/// The Mann-Whitney U test of `base` against `changed`.
struct MannWhitney {
  double u = 0;  ///< U of `changed` (pairs in which its value is larger, ties counting one half)
  double z = 0;  ///< the normal approximation's score, tie- and continuity-corrected
  double p = 1;  ///< two-sided p-value
};

/// Throws std::invalid_argument naming the side when either has fewer than 2 values, or a value
/// is not finite. Ties share their mean rank.
MannWhitney mann_whitney(const std::vector<double>& base, const std::vector<double>& changed);

/// The change of the median, median(changed) / median(base) - 1, and its bootstrap percentile
/// interval: `resamples` resamplings of both sides with replacement, from `seed` (the same inputs
/// give the same interval).
struct MedianChange {
  double change = 0;
  double low = 0, high = 0;  ///< the interval's bounds
};
MedianChange median_change(const std::vector<double>& base, const std::vector<double>& changed,
                           double confidence = 0.95, int resamples = 1000,
                           std::uint64_t seed = 0x5eed);

/// What a comparison says.
enum class Verdict { kNoChange, kSlower, kFaster };
/// "no change", "slower", "faster".
std::string to_string(Verdict v);

/// The test, the change and the verdict of one stage (or the FPS rate, or the period).
struct Comparison {
  MannWhitney test;
  MedianChange change;
  Verdict verdict = Verdict::kNoChange;
};

/// Slower (faster) when the test's p < `alpha` and the median grew (shrank) by more than
/// `threshold` (0.02: 2 %); no change otherwise. Times: larger is slower; for a rate
/// (`larger_is_slower` false) a drop is. Throws std::invalid_argument for alpha outside (0, 1) or a
/// negative threshold, naming the value.
Comparison compare(const std::vector<double>& base, const std::vector<double>& changed,
                   double alpha = 0.05, double threshold = 0.02, bool larger_is_slower = true);

}  // namespace simprof::compare
