// SPDX-License-Identifier: MIT
// Latency statistics over a window of samples: mean, standard deviation, min, max, percentiles and
// a text histogram. Computed on demand, off the hot path.
//
/* clang-format off */
//   auto s = prof.stats("physics");              // LatencyStats over the latest stats_window steps
//   fmt::print("p99 {:.1f} us\n", s.p99 * 1e6);
//   fmt::print("{}", prof.histogram("physics")); // text histogram for the terminal
/* clang-format on */
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace simprof {

/// Summary statistics of a set of latencies (seconds, or whatever unit the values were in).
struct LatencyStats {
  /// Number of values summarized.
  std::size_t count = 0;
  ///@{
  /// Mean, population standard deviation, smallest and largest value (NaN when count is 0).
  double mean = 0, stddev = 0, min = 0, max = 0;
  ///@}
  ///@{
  /// Percentiles, interpolated linearly between closest ranks (NaN when count is 0).
  double p50 = 0, p95 = 0, p99 = 0;
  ///@}
};

/// Summary of `values` (any order). stddev is the population standard deviation; percentiles
/// interpolate linearly between closest ranks (numpy's default). An empty input gives count 0 and
/// NaNs.
LatencyStats summarize(std::vector<double> values);

/// The q-quantile (q in [0, 1]) of `sorted` (ascending), interpolated linearly between closest
/// ranks. Throws std::invalid_argument for q outside [0, 1] or an empty input.
double percentile_sorted(const std::vector<double>& sorted, double q);

/// How text_histogram() bins and draws.
struct HistogramOptions {
  std::size_t bins = 20;   ///< >= 1
  std::size_t width = 50;  ///< characters of the longest bar, >= 1
  double scale = 1e6;      ///< values are multiplied by this for the labels (1e6: seconds -> us)
  /// The unit printed after the labels.
  const char* unit = "us";
};

/// A text histogram, one line per bin: "[  12.0,   13.5) us |#######      | 42". Throws
/// std::invalid_argument for bins or width 0. An empty input gives "(no samples)\n".
std::string text_histogram(const std::vector<double>& values, const HistogramOptions& options = {});

}  // namespace simprof
