// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "simprof/base/running_mean.hpp"

using simprof::RunningMean;

TEST(RunningMean, WindowIsNanUntilFullThenMeanOfLatest) {
  RunningMean m(3);
  EXPECT_TRUE(std::isnan(m.value()));
  m.update(1.0);
  m.update(2.0);
  EXPECT_TRUE(std::isnan(m.value()));
  EXPECT_DOUBLE_EQ(m.partial_value(), 1.5);
  m.update(3.0);
  EXPECT_DOUBLE_EQ(m.value(), 2.0);
  m.update(10.0);  // window now {2, 3, 10}
  EXPECT_DOUBLE_EQ(m.value(), 5.0);
  EXPECT_EQ(m.count(), 4u);
  EXPECT_FALSE(m.is_ema());
}

TEST(RunningMean, WindowOfOneIsTheLatest) {
  RunningMean m(1);
  m.update(4.0);
  EXPECT_DOUBLE_EQ(m.value(), 4.0);
  m.update(-2.5);
  EXPECT_DOUBLE_EQ(m.value(), -2.5);
}

TEST(RunningMean, NoDriftOverManyUpdates) {
  // Values of very different magnitudes pass through the window; a naive running sum drifts.
  RunningMean m(4);
  for (int i = 0; i < 1'000'000; ++i) m.update(i % 2 ? 1e8 : 1e-8);
  for (int i = 0; i < 4; ++i) m.update(0.1);
  EXPECT_NEAR(m.value(), 0.1, 1e-15);
}

TEST(RunningMean, EmaSeededWithFirstValue) {
  auto m = RunningMean::ema(0.9);
  EXPECT_TRUE(std::isnan(m.value()));
  m.update(10.0);
  EXPECT_DOUBLE_EQ(m.value(), 10.0);
  m.update(20.0);
  EXPECT_DOUBLE_EQ(m.value(), 0.9 * 10.0 + 0.1 * 20.0);
  EXPECT_TRUE(m.is_ema());
  EXPECT_DOUBLE_EQ(m.alpha(), 0.9);
}

TEST(RunningMean, EmaAlphaZeroFollowsAndOneHolds) {
  auto follow = RunningMean::ema(0.0);
  auto hold = RunningMean::ema(1.0);
  for (double x : {1.0, 5.0, 9.0}) {
    follow.update(x);
    hold.update(x);
  }
  EXPECT_DOUBLE_EQ(follow.value(), 9.0);
  EXPECT_DOUBLE_EQ(hold.value(), 1.0);
}

TEST(RunningMean, ResetForgetsEverything) {
  RunningMean m(2);
  m.update(1.0);
  m.update(3.0);
  m.reset();
  EXPECT_EQ(m.count(), 0u);
  EXPECT_TRUE(std::isnan(m.value()));
  m.update(7.0);
  m.update(9.0);
  EXPECT_DOUBLE_EQ(m.value(), 8.0);
  auto e = RunningMean::ema(0.5);
  e.update(4.0);
  e.reset();
  EXPECT_TRUE(std::isnan(e.value()));
}

TEST(RunningMean, CopiesAreIndependent) {
  RunningMean a(2);
  a.update(1.0);
  RunningMean b = a;
  b.update(3.0);
  EXPECT_TRUE(std::isnan(a.value()));
  EXPECT_DOUBLE_EQ(b.value(), 2.0);
}

TEST(RunningMean, RejectsBadArguments) {
  EXPECT_THROW(RunningMean(0), std::invalid_argument);
  for (double a : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN(),
                   std::numeric_limits<double>::infinity()})
    EXPECT_THROW(RunningMean::ema(a), std::invalid_argument) << a;
  RunningMean m(2);
  try {
    m.update(std::numeric_limits<double>::quiet_NaN());
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("nan"), std::string::npos) << e.what();
  }
  EXPECT_EQ(m.count(), 0u);
}
