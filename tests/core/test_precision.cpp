// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "simprof/precision/checker.hpp"
#include "simprof/precision/rounding.hpp"

using namespace simprof;

TEST(PrecisionChecker, IdenticalBuffersPass) {
  PrecisionChecker c;
  std::vector<float> a = {1.0f, -2.0f, 3.5f};
  const std::vector<float> b = a;  // equal, but another buffer: compared element by element
  const auto& r = c.compare("positions", QuantityClass::kState, a.data(), b.data(), a.size());
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.rel_l2, 0.0);
  EXPECT_EQ(r.max_abs, 0.0);
  EXPECT_TRUE(c.all_passed());
}

TEST(PrecisionChecker, FindsKnownErrors) {
  PrecisionChecker c;
  std::vector<float> ref = {1.0f, 2.0f, -4.0f, 8.0f}, var(4);
  for (int i = 0; i < 4; ++i)
    var[static_cast<std::size_t>(i)] = ref[static_cast<std::size_t>(i)] * 1.02f;
  const auto& r = c.compare("velocities", QuantityClass::kState, ref.data(), var.data(), 4);
  EXPECT_NEAR(r.rel_l2, 0.02, 1e-6);
  EXPECT_NEAR(r.max_abs, 0.16, 1e-5);
  EXPECT_FALSE(r.passed);  // state tolerance 1e-2
  var = ref;
  var[2] = std::numeric_limits<float>::quiet_NaN();
  var[3] = std::numeric_limits<float>::infinity();
  const auto& bad = c.compare("state", QuantityClass::kState, ref.data(), var.data(), 4);
  EXPECT_EQ(bad.nan, 1u);
  EXPECT_EQ(bad.inf, 1u);
  EXPECT_FALSE(bad.passed);
  EXPECT_FALSE(c.all_passed());
  const std::string t = c.table();
  EXPECT_NE(t.find("FAILED"), std::string::npos) << t;
  EXPECT_NE(t.find("velocities"), std::string::npos) << t;
}

TEST(PrecisionChecker, ToleranceClassesDiffer) {
  PrecisionChecker c;
  const float e_ref = 100.0f, e_var = 100.2f;  // 2e-3 relative
  EXPECT_FALSE(c.compare("energy", QuantityClass::kScalar, &e_ref, &e_var, 1).passed);
  EXPECT_TRUE(c.compare("energy norm", QuantityClass::kNorm, &e_ref, &e_var, 1).passed);
  c.set_tolerance(QuantityClass::kScalar, Tolerance{5e-3, 1.0});
  EXPECT_TRUE(c.compare("energy", QuantityClass::kScalar, &e_ref, &e_var, 1).passed);
  EXPECT_THROW(c.set_tolerance(QuantityClass::kState, Tolerance{-1, 1}), std::invalid_argument);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_THROW(c.compare("x", QuantityClass::kScalar, &inf, &e_var, 1), std::invalid_argument);
  EXPECT_THROW(c.compare("x", QuantityClass::kScalar, nullptr, &e_var, 1), std::invalid_argument);
}

TEST(PrecisionChecker, SumsOfSplitBuffersAddUpToTheWhole) {
  std::vector<float> ref = {1.0f, 2.0f, -4.0f, 8.0f, 0.5f, -1.5f}, var = ref;
  var[1] = 2.5f;
  var[4] = std::numeric_limits<float>::quiet_NaN();
  var[5] = -1.0f;
  const ErrorSums whole = error_sums(ref.data(), var.data(), 6);
  ErrorSums parts = error_sums(ref.data(), var.data(), 2);  // x
  parts += error_sums(ref.data() + 2, var.data() + 2, 2);   // y
  parts += error_sums(ref.data() + 4, var.data() + 4, 2);   // z
  EXPECT_EQ(parts.count, 6u);
  EXPECT_DOUBLE_EQ(parts.diff2, whole.diff2);
  EXPECT_DOUBLE_EQ(parts.ref2, whole.ref2);
  EXPECT_DOUBLE_EQ(parts.var2, whole.var2);
  EXPECT_DOUBLE_EQ(parts.max_abs, 0.5);
  EXPECT_EQ(parts.nan, 1u);
  PrecisionChecker a, b;
  const PrecisionResult from_sums = a.record("p", QuantityClass::kState, parts);
  const PrecisionResult direct = b.compare("p", QuantityClass::kState, ref.data(), var.data(), 6);
  EXPECT_DOUBLE_EQ(from_sums.rel_l2, direct.rel_l2);
  EXPECT_EQ(from_sums.nan, direct.nan);
  EXPECT_EQ(from_sums.passed, direct.passed);
}

TEST(PrecisionChecker, RecordRefusesANonFiniteReferenceNamingWhere) {
  std::vector<float> ref = {1.0f, 2.0f, 3.0f, 4.0f}, var = ref;
  ref[3] = std::numeric_limits<float>::infinity();
  ErrorSums s = error_sums(ref.data(), var.data(), 2);
  s += error_sums(ref.data() + 2, var.data() + 2, 2);
  EXPECT_EQ(s.bad_reference, 1u);
  EXPECT_EQ(s.first_bad_reference, 3u);
  PrecisionChecker c;
  try {
    c.record("energy", QuantityClass::kScalar, s);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("1 non-finite values, the first at index 3"),
              std::string::npos)
        << e.what();
  }
}

TEST(PrecisionRounding, Fp16RoundsToNearestEven) {
  EXPECT_EQ(round_to_fp16(1.0f), 1.0f);
  EXPECT_EQ(round_to_fp16(1.0f + std::ldexp(1.0f, -11)), 1.0f);  // a tie: to even
  EXPECT_EQ(round_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(round_to_fp16(65504.0f), 65504.0f);
  EXPECT_TRUE(std::isinf(round_to_fp16(70000.0f)));
  EXPECT_EQ(round_to_fp16(1e-8f), 0.0f);
  EXPECT_EQ(round_to_fp16(-0.1f), -0.0999755859375f);
}

TEST(PrecisionRounding, Bf16RoundsToNearestEven) {
  EXPECT_EQ(round_to_bf16(1.0f), 1.0f);
  EXPECT_EQ(round_to_bf16(1.0f + std::ldexp(1.0f, -8)), 1.0f);
  EXPECT_EQ(round_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(round_to_bf16(-0.1f), -0.10009765625f);
  EXPECT_TRUE(std::isnan(round_to_bf16(std::nanf(""))));
  // A state rounded to bf16 keeps about three significant digits: within the state tolerance.
  std::vector<float> ref(1000), var(1000);
  for (int i = 0; i < 1000; ++i) {
    ref[static_cast<std::size_t>(i)] = std::sin(0.37f * static_cast<float>(i)) * 3.0f;
    var[static_cast<std::size_t>(i)] = round_to_bf16(ref[static_cast<std::size_t>(i)]);
  }
  PrecisionChecker c;
  const auto& r =
      c.compare("bf16 state", QuantityClass::kState, ref.data(), var.data(), ref.size());
  EXPECT_GT(r.rel_l2, 1e-4);
  EXPECT_LT(r.rel_l2, 4e-3);
  EXPECT_TRUE(r.passed);
}
