// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <stdexcept>

#include "simprof/base/clock.hpp"
#include "simprof/base/manual_clock.hpp"

using simprof::Clock;
using simprof::ClockSource;
using simprof::ManualClock;

TEST(ManualClock, MovesOnlyWhenTold) {
  ManualClock mc;
  const Clock c = mc.clock();
  EXPECT_EQ(c.now(), 0);
  mc.advance(0.25);
  EXPECT_EQ(c.now(), 250'000'000);
  mc.advance_ns(5);
  EXPECT_EQ(c.now(), 250'000'005);
  EXPECT_DOUBLE_EQ(c.seconds(c.now()), 0.250000005);
  EXPECT_EQ(c.ticks(0.5), 500'000'000);
}

TEST(Clock, CustomRejectsBadArguments) {
  EXPECT_THROW(Clock::custom(nullptr, nullptr, 1e9), std::invalid_argument);
  auto fn = [](const void*) noexcept -> std::int64_t { return 7; };
  try {
    Clock::custom(fn, nullptr, -1.0);
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ticks_per_second = -1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Clock::custom(fn, nullptr, 0.0), std::invalid_argument);
  EXPECT_EQ(Clock::custom(fn, nullptr, 1000.0).now(), 7);
  EXPECT_DOUBLE_EQ(Clock::custom(fn, nullptr, 1000.0).seconds(7), 0.007);
}

TEST(Clock, SteadyIsMonotonicAndInNanoseconds) {
  const Clock c = Clock::steady();
  EXPECT_DOUBLE_EQ(c.ticks_per_second(), 1e9);
  EXPECT_EQ(c.source(), ClockSource::kSteady);
  const auto a = c.now();
  const auto b = c.now();
  EXPECT_LE(a, b);
}

TEST(Clock, TscWhereAvailable) {
  if (!simprof::tsc_available()) {
    EXPECT_THROW(Clock::tsc(), std::runtime_error);
    EXPECT_EQ(Clock::from_source(ClockSource::kAuto).source(), ClockSource::kSteady);
    GTEST_SKIP() << "no invariant TSC on this CPU";
  }
  const Clock c = Clock::tsc();
  EXPECT_EQ(c.source(), ClockSource::kTsc);
  // A sanity range for any x86-64 made this century, not a timing assertion.
  EXPECT_GT(c.ticks_per_second(), 1e8);
  EXPECT_LT(c.ticks_per_second(), 1e10);
  const auto a = c.now();
  const auto b = c.now();
  EXPECT_LE(a, b);
  EXPECT_EQ(Clock::from_source(ClockSource::kAuto).source(), ClockSource::kTsc);
}

TEST(Clock, SourceNames) {
  EXPECT_EQ(simprof::to_string(ClockSource::kAuto), "auto");
  EXPECT_EQ(simprof::to_string(ClockSource::kSteady), "steady");
  EXPECT_EQ(simprof::to_string(ClockSource::kTsc), "tsc");
}
