// SPDX-License-Identifier: MIT
// `simprof compare`'s statistics on made-up step times: a known slowdown is found, noise is not,
// the p-value matches the textbook's, and bad input is named.
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <vector>

#include "statistics.hpp"

namespace {

using simprof::compare::compare;
using simprof::compare::Verdict;

// `n` step times around `mean_us` microseconds, a normal spread of `sd` (a fraction of the mean)
// plus a long tail: one step in 20 takes 30 % longer (a step time's tail).
std::vector<double> steps(std::mt19937_64& rng, std::size_t n, double mean_us, double sd) {
  std::normal_distribution<double> noise(0, sd * mean_us);
  std::bernoulli_distribution tail(0.05);
  std::vector<double> v(n);
  for (double& x : v) x = (mean_us + noise(rng)) * (tail(rng) ? 1.3 : 1.0) * 1e-6;
  return v;
}

TEST(MannWhitney, MatchesTheTextbookExampleWithTies) {
  // Two groups with one tie across them (7). Ranks of b: 1+2+3+4+5.5 = 15.5, so U = 15.5 - 15 =
  // 0.5 (b's 7 against a's 7 counts one half). Mean 12.5; variance 25/12 * (11 - 6/90) = 22.778
  // (the tie correction: one pair, 2^3 - 2 = 6); with the continuity correction
  // z = (0.5 - 12.5 + 0.5) / 4.7726 = -2.4096 and p = 2 * (1 - Phi(2.4096)) = 0.01597, as
  // scipy.stats.mannwhitneyu(..., method="asymptotic") computes it.
  const std::vector<double> a{7, 8, 9, 10, 11}, b{1, 2, 3, 4, 7};
  const auto r = simprof::compare::mann_whitney(a, b);
  EXPECT_DOUBLE_EQ(r.u, 0.5);
  EXPECT_NEAR(r.z, -2.4096, 0.0005);
  EXPECT_NEAR(r.p, 0.01597, 0.00005);
}

TEST(Compare, AThreePercentSlowdownIsFoundAndAnUnchangedStageIsNot) {
  std::mt19937_64 rng(42);
  const auto base = steps(rng, 400, 300, 0.01), slower = steps(rng, 400, 309, 0.01);
  const auto c = compare(base, slower);
  EXPECT_EQ(c.verdict, Verdict::kSlower);
  EXPECT_LT(c.test.p, 1e-6);
  EXPECT_NEAR(c.change.change, 0.03, 0.005);
  EXPECT_LT(c.change.low, 0.03);
  EXPECT_GT(c.change.high, 0.03);
  const auto same = compare(steps(rng, 400, 120, 0.01), steps(rng, 400, 120, 0.01));
  EXPECT_EQ(same.verdict, Verdict::kNoChange);
  const auto faster = compare(slower, base);
  EXPECT_EQ(faster.verdict, Verdict::kFaster);
}

TEST(Compare, NoiseFlagsLessThanAlphaOver200Seeds) {
  int significant = 0, flagged = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    const auto a = steps(rng, 200, 300, 0.02), b = steps(rng, 200, 300, 0.02);
    const auto c = compare(a, b);
    significant += c.test.p < 0.05;
    flagged += c.verdict != Verdict::kNoChange;
  }
  // The test alone is wrong at its alpha's rate (10 of 200 expected; 3 sigma of a binomial is 9);
  // the verdict, which also needs a change past 2 %, less often than that.
  EXPECT_LE(significant, 19);
  EXPECT_LT(flagged, 10);
}

TEST(Compare, ASmallChangeBelowTheThresholdIsNoChangeEvenWhenSignificant) {
  std::mt19937_64 rng(7);
  const auto c = compare(steps(rng, 2000, 300, 0.002), steps(rng, 2000, 303, 0.002));
  EXPECT_LT(c.test.p, 0.05);  // 1 %: real, and below the 2 % threshold
  EXPECT_EQ(c.verdict, Verdict::kNoChange);
  EXPECT_EQ(
      compare(steps(rng, 2000, 300, 0.002), steps(rng, 2000, 303, 0.002), 0.05, 0.005).verdict,
      Verdict::kSlower);
}

TEST(Compare, BadInputIsNamed) {
  const std::vector<double> one{1.0}, two{1.0, 2.0};
  try {
    compare(one, two);
    FAIL() << "one value was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the base run has 1 values (expected at least 2)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(compare(two, two, 1.5), std::invalid_argument);
  EXPECT_THROW(compare(two, {1.0, std::nan("")}), std::invalid_argument);
  const auto same = compare({2.0, 2.0, 2.0}, {2.0, 2.0, 2.0});
  EXPECT_DOUBLE_EQ(same.test.p, 1.0);
  EXPECT_EQ(same.verdict, Verdict::kNoChange);
}

}  // namespace
