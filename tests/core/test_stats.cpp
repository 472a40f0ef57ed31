// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "simprof/base/stats.hpp"

using simprof::percentile_sorted;
using simprof::summarize;

TEST(Stats, SummaryOfKnownValues) {
  // 1..100 shuffled: mean 50.5, population sigma sqrt((100^2-1)/12).
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  const auto s = summarize(v);
  EXPECT_EQ(s.count, 100u);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  EXPECT_NEAR(s.stddev, std::sqrt((100.0 * 100.0 - 1.0) / 12.0), 1e-12);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 100.0);
  EXPECT_DOUBLE_EQ(s.p50, 50.5);   // numpy.percentile(range(1,101), 50)
  EXPECT_DOUBLE_EQ(s.p95, 95.05);  // numpy: 95.05
  EXPECT_DOUBLE_EQ(s.p99, 99.01);  // numpy: 99.01
}

TEST(Stats, EmptyAndSingle) {
  const auto e = summarize({});
  EXPECT_EQ(e.count, 0u);
  EXPECT_TRUE(std::isnan(e.mean));
  EXPECT_TRUE(std::isnan(e.p99));
  const auto one = summarize({3.0});
  EXPECT_DOUBLE_EQ(one.p50, 3.0);
  EXPECT_DOUBLE_EQ(one.p99, 3.0);
  EXPECT_DOUBLE_EQ(one.stddev, 0.0);
}

TEST(Stats, PercentileValidates) {
  EXPECT_THROW(percentile_sorted({}, 0.5), std::invalid_argument);
  EXPECT_THROW(percentile_sorted({1.0}, 1.5), std::invalid_argument);
  EXPECT_THROW(percentile_sorted({1.0}, std::nan("")), std::invalid_argument);
  EXPECT_DOUBLE_EQ(percentile_sorted({1.0, 2.0}, 0.25), 1.25);
}

TEST(Stats, TextHistogramCountsEverySample) {
  std::vector<double> v;
  for (int i = 0; i < 90; ++i) v.push_back(1e-6);  // 1 us
  for (int i = 0; i < 10; ++i) v.push_back(3e-6);  // 3 us
  simprof::HistogramOptions o;
  o.bins = 4;
  o.width = 10;
  const std::string h = simprof::text_histogram(v, o);
  // First bin holds 90 at full width; the last bin's 10 get ceil(10 * 10 / 90) = 2 characters.
  EXPECT_NE(h.find("|##########| 90"), std::string::npos) << h;
  EXPECT_NE(h.find("|##        | 10"), std::string::npos) << h;
  EXPECT_NE(h.find("1.000"), std::string::npos) << h;
  EXPECT_NE(h.find("3.000] us"), std::string::npos) << h;
  int lines = 0;
  for (char c : h) lines += c == '\n';
  EXPECT_EQ(lines, 4);
}

TEST(Stats, TextHistogramEdgeCases) {
  EXPECT_EQ(simprof::text_histogram({}), "(no samples)\n");
  const std::string same = simprof::text_histogram({2e-6, 2e-6});
  EXPECT_NE(same.find("| 2\n"), std::string::npos) << same;  // one bin when all are equal
  simprof::HistogramOptions bad;
  bad.bins = 0;
  EXPECT_THROW(simprof::text_histogram({1.0}, bad), std::invalid_argument);
  bad.bins = 3;
  bad.width = 0;
  EXPECT_THROW(simprof::text_histogram({1.0}, bad), std::invalid_argument);
}
