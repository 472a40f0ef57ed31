// SPDX-License-Identifier: MIT
// The kernel tracer's window by CUPTI correlation ids (src/cuda/correlation_window.hpp): strictly
// between the two marks, across the 2^32 wrap, 0 never numbered.
#include <gtest/gtest.h>

#include <cstdint>

#include "correlation_window.hpp"

using simprof::cuda::detail::CorrelationWindow;

TEST(CorrelationWindow, HoldsWhatWasLaunchedStrictlyBetweenTheMarks) {
  CorrelationWindow w;
  w.all = false;
  w.after = 100;
  w.before = 200;
  EXPECT_FALSE(w.contains(99));
  EXPECT_FALSE(w.contains(100)) << "the start's marker call itself";
  EXPECT_TRUE(w.contains(101));
  EXPECT_TRUE(w.contains(199));
  EXPECT_FALSE(w.contains(200)) << "the end's marker call itself";
  EXPECT_FALSE(w.contains(0)) << "0: no correlation";
  EXPECT_FALSE(w.later(199));
  EXPECT_TRUE(w.later(200));
  EXPECT_TRUE(w.later(5000));
  EXPECT_FALSE(w.later(0));
}

TEST(CorrelationWindow, AcrossTheWrapOfCuptisSequence) {
  CorrelationWindow w;
  w.all = false;
  w.after = 0xFFFFFFF0u;
  w.before = 0x10u;
  EXPECT_FALSE(w.contains(0xFFFFFFF0u));
  EXPECT_TRUE(w.contains(0xFFFFFFF1u));
  EXPECT_TRUE(w.contains(0xFFFFFFFFu));
  EXPECT_FALSE(w.contains(0)) << "0 is no correlation, even where the sequence wraps through it";
  EXPECT_TRUE(w.contains(1));
  EXPECT_TRUE(w.contains(0xFu));
  EXPECT_FALSE(w.contains(0x10u));
  EXPECT_FALSE(w.contains(0x11u));
  EXPECT_FALSE(w.later(0xFFFFFFFFu));
  EXPECT_TRUE(w.later(0x10u));
  EXPECT_TRUE(w.later(0x1000u));
}

TEST(CorrelationWindow, WithoutMarksEverythingIsTheWindows) {
  CorrelationWindow w;  // all = true
  EXPECT_TRUE(w.contains(0));
  EXPECT_TRUE(w.contains(12345));
  EXPECT_FALSE(w.later(12345));
}

TEST(CorrelationWindow, AnEmptyWindowHoldsNothing) {
  CorrelationWindow w;
  w.all = false;
  w.after = 7;
  w.before = 8;  // the two marks back to back: nothing launched between them
  for (std::uint32_t c : {0u, 6u, 7u, 8u, 9u, 0xFFFFFFFFu}) EXPECT_FALSE(w.contains(c)) << c;
}
