// SPDX-License-Identifier: MIT
#include "statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "simprof/base/stats.hpp"

namespace simprof::compare {

namespace {

void check(const std::vector<double>& v, const char* side) {
  if (v.size() < 2)
    throw std::invalid_argument(fmt::format(
        "simprof compare: the {} run has {} values (expected at least 2)", side, v.size()));
  for (const double x : v)
    if (!std::isfinite(x))
      throw std::invalid_argument(
          fmt::format("simprof compare: the {} run has a value {} (expected finite)", side, x));
}

// percentile_sorted(sorted v, 0.5) without sorting all of v (v is reordered).
double median(std::vector<double>& v) {
  const std::size_t lo = (v.size() - 1) / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(lo), v.end());
  if (v.size() % 2 == 1) return v[lo];
  const double hi = *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(lo) + 1, v.end());
  return v[lo] + (hi - v[lo]) * 0.5;
}

}  // namespace

MannWhitney mann_whitney(const std::vector<double>& base, const std::vector<double>& changed) {
  check(base, "base");
  check(changed, "new");
  const std::size_t n1 = base.size(), n2 = changed.size(), n = n1 + n2;
  std::vector<std::pair<double, bool>> all;  // value, from `changed`
  all.reserve(n);
  for (const double x : base) all.emplace_back(x, false);
  for (const double x : changed) all.emplace_back(x, true);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double rank_sum = 0, ties = 0;  // ranks of `changed`; sum of t^3 - t over tied groups
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && all[j].first == all[i].first) ++j;
    const double rank = 0.5 * static_cast<double>(i + 1 + j);  // mean of ranks i+1 .. j
    for (std::size_t k = i; k < j; ++k)
      if (all[k].second) rank_sum += rank;
    const double t = static_cast<double>(j - i);
    ties += t * t * t - t;
    i = j;
  }
  const double a = static_cast<double>(n1), b = static_cast<double>(n2), c = static_cast<double>(n);
  MannWhitney r;
  r.u = rank_sum - b * (b + 1) / 2;
  const double mean = a * b / 2;
  const double var = a * b / 12 * ((c + 1) - ties / (c * (c - 1)));
  if (var <= 0) return r;  // every value the same: no evidence either way
  const double d = r.u - mean;
  r.z = (d - std::copysign(std::min(0.5, std::fabs(d)), d)) / std::sqrt(var);
  r.p = std::min(1.0, std::erfc(std::fabs(r.z) / std::sqrt(2.0)));
  return r;
}

MedianChange median_change(const std::vector<double>& base, const std::vector<double>& changed,
                           double confidence, int resamples, std::uint64_t seed) {
  check(base, "base");
  check(changed, "new");
  if (!(confidence > 0 && confidence < 1) || resamples < 10)
    throw std::invalid_argument(fmt::format(
        "simprof compare: confidence {} and {} resamples (expected 0 < confidence < 1 and at "
        "least 10 resamples)",
        confidence, resamples));
  std::vector<double> a = base, b = changed;
  const double base_median = median(a);
  if (base_median <= 0)
    throw std::invalid_argument(
        fmt::format("simprof compare: the base run's median is {} (expected > 0)", base_median));
  MedianChange out;
  out.change = median(b) / base_median - 1;
  std::mt19937_64 rng(seed);
  std::vector<double> ra(a.size()), rb(b.size()), changes;
  changes.reserve(static_cast<std::size_t>(resamples));
  std::uniform_int_distribution<std::size_t> pick_a(0, a.size() - 1), pick_b(0, b.size() - 1);
  for (int i = 0; i < resamples; ++i) {
    for (double& x : ra) x = a[pick_a(rng)];
    for (double& x : rb) x = b[pick_b(rng)];
    const double m = median(ra);
    if (m > 0) changes.push_back(median(rb) / m - 1);
  }
  std::sort(changes.begin(), changes.end());
  out.low = percentile_sorted(changes, (1 - confidence) / 2);
  out.high = percentile_sorted(changes, 1 - (1 - confidence) / 2);
  return out;
}

std::string to_string(Verdict v) {
  return v == Verdict::kSlower ? "slower" : v == Verdict::kFaster ? "faster" : "no change";
}

Comparison compare(const std::vector<double>& base, const std::vector<double>& changed,
                   double alpha, double threshold, bool larger_is_slower) {
  if (!(alpha > 0 && alpha < 1) || !(threshold >= 0))
    throw std::invalid_argument(fmt::format(
        "simprof compare: alpha {} and threshold {} (expected 0 < alpha < 1, threshold >= 0)",
        alpha, threshold));
  Comparison c;
  c.test = mann_whitney(base, changed);
  c.change = median_change(base, changed);
  if (c.test.p < alpha && std::fabs(c.change.change) > threshold)
    c.verdict = (c.change.change > 0) == larger_is_slower ? Verdict::kSlower : Verdict::kFaster;
  return c;
}

}  // namespace simprof::compare
