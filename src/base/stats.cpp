// SPDX-License-Identifier: MIT
#include "simprof/base/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace simprof {

double percentile_sorted(const std::vector<double>& sorted, double q) {
  if (!(q >= 0.0 && q <= 1.0))
    throw std::invalid_argument(fmt::format("simprof: percentile q = {} (expected [0, 1])", q));
  if (sorted.empty()) throw std::invalid_argument("simprof: percentile of an empty sample");
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

LatencyStats summarize(std::vector<double> values) {
  LatencyStats s;
  s.count = values.size();
  if (values.empty()) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    s.mean = s.stddev = s.min = s.max = s.p50 = s.p95 = s.p99 = nan;
    return s;
  }
  std::sort(values.begin(), values.end());
  double sum = 0.0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  double sq = 0.0;
  for (double v : values) sq += (v - s.mean) * (v - s.mean);
  s.stddev = std::sqrt(sq / static_cast<double>(values.size()));
  s.min = values.front();
  s.max = values.back();
  s.p50 = percentile_sorted(values, 0.50);
  s.p95 = percentile_sorted(values, 0.95);
  s.p99 = percentile_sorted(values, 0.99);
  return s;
}

std::string text_histogram(const std::vector<double>& values, const HistogramOptions& o) {
  if (o.bins == 0) throw std::invalid_argument("simprof: histogram bins = 0 (expected >= 1)");
  if (o.width == 0) throw std::invalid_argument("simprof: histogram width = 0 (expected >= 1)");
  if (values.empty()) return "(no samples)\n";
  const auto [mn_it, mx_it] = std::minmax_element(values.begin(), values.end());
  const double lo = *mn_it, hi = *mx_it;
  const double span = hi > lo ? hi - lo : 1.0;
  const std::size_t bins = hi > lo ? o.bins : 1;
  std::vector<std::size_t> counts(bins, 0);
  for (double v : values) {
    auto b = static_cast<std::size_t>((v - lo) / span * static_cast<double>(bins));
    counts[std::min(b, bins - 1)]++;
  }
  const std::size_t peak = *std::max_element(counts.begin(), counts.end());
  fmt::memory_buffer out;
  for (std::size_t b = 0; b < bins; ++b) {
    const double a = (lo + span * static_cast<double>(b) / static_cast<double>(bins)) * o.scale;
    const double z = (lo + span * static_cast<double>(b + 1) / static_cast<double>(bins)) * o.scale;
    const std::size_t bar = peak ? (counts[b] * o.width + peak - 1) / peak : 0;
    fmt::format_to(std::back_inserter(out), "[{:10.3f}, {:10.3f}{} {} |{:<{}}| {}\n", a, z,
                   b + 1 == bins ? ']' : ')', o.unit, std::string(bar, '#'), o.width, counts[b]);
  }
  return fmt::to_string(out);
}

}  // namespace simprof
