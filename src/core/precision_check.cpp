// SPDX-License-Identifier: MIT
#include "simprof/precision_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "simprof/fps_tracker.hpp"  // default_logger()

namespace simprof {

std::string to_string(QuantityClass c) {
  switch (c) {
    case QuantityClass::kScalar:
      return "scalar";
    case QuantityClass::kNorm:
      return "norm";
    case QuantityClass::kState:
      return "state";
  }
  return "?";
}

PrecisionChecker::PrecisionChecker() {
  tol_[0] = Tolerance{1e-3, 1e30};
  tol_[1] = Tolerance{5e-3, 1e30};
  tol_[2] = Tolerance{1e-2, 1e30};
}

void PrecisionChecker::set_tolerance(QuantityClass cls, Tolerance t) {
  if (!(t.rel_l2 >= 0) || !(t.max_abs >= 0))
    throw std::invalid_argument(
        fmt::format("simprof: tolerance for {} = (rel_l2 {}, max_abs {}) (expected values >= 0)",
                    to_string(cls), t.rel_l2, t.max_abs));
  tol_[static_cast<int>(cls)] = t;
}

const Tolerance& PrecisionChecker::tolerance(QuantityClass cls) const noexcept {
  return tol_[static_cast<int>(cls)];
}

ErrorSums& ErrorSums::operator+=(const ErrorSums& o) noexcept {
  if (o.bad_reference && !bad_reference) first_bad_reference = count + o.first_bad_reference;
  count += o.count;
  diff2 += o.diff2;
  ref2 += o.ref2;
  var2 += o.var2;
  max_abs = std::max(max_abs, o.max_abs);
  nan += o.nan;
  inf += o.inf;
  bad_reference += o.bad_reference;
  return *this;
}

ErrorSums error_sums(const float* reference, const float* variant, std::size_t n) {
  if (n > 0 && (reference == nullptr || variant == nullptr))
    throw std::invalid_argument("simprof: error_sums: null buffer with n = " + std::to_string(n));
  ErrorSums s;
  s.count = n;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = reference[i], b = variant[i];
    if (!std::isfinite(a)) {
      if (!s.bad_reference) s.first_bad_reference = i;
      ++s.bad_reference;
      continue;
    }
    if (std::isnan(b)) {
      ++s.nan;
      continue;
    }
    if (std::isinf(b)) {
      ++s.inf;
      continue;
    }
    s.diff2 += (b - a) * (b - a);
    s.ref2 += a * a;
    s.var2 += b * b;
    s.max_abs = std::max(s.max_abs, std::fabs(b - a));
  }
  return s;
}

const PrecisionResult& PrecisionChecker::compare(std::string name, QuantityClass cls,
                                                 const float* reference, const float* variant,
                                                 std::size_t n) {
  if (n > 0 && (reference == nullptr || variant == nullptr))
    throw std::invalid_argument(fmt::format("simprof: precision check '{}': null buffer", name));
  const ErrorSums s = error_sums(reference, variant, n);
  if (s.bad_reference)
    throw std::invalid_argument(fmt::format(
        "simprof: precision check '{}': reference[{}] = {} (expected a finite reference)", name,
        s.first_bad_reference, reference[s.first_bad_reference]));
  return record(std::move(name), cls, s);
}

const PrecisionResult& PrecisionChecker::record(std::string name, QuantityClass cls,
                                                const ErrorSums& s) {
  if (s.bad_reference)
    throw std::invalid_argument(fmt::format(
        "simprof: precision check '{}': the reference has {} non-finite values, the first at "
        "index {} (expected a finite reference)",
        name, s.bad_reference, s.first_bad_reference));
  PrecisionResult r;
  r.name = std::move(name);
  r.cls = cls;
  r.count = s.count;
  r.nan = s.nan;
  r.inf = s.inf;
  r.max_abs = s.max_abs;
  r.rel_l2 = s.ref2 > 0 ? std::sqrt(s.diff2 / s.ref2) : std::sqrt(s.diff2);
  const Tolerance& t = tolerance(cls);
  r.passed = r.nan == 0 && r.inf == 0 && r.rel_l2 <= t.rel_l2 && r.max_abs <= t.max_abs;
  if (!r.passed)
    default_logger()->warn(
        "simprof: precision check '{}' ({}) failed: rel L2 {:.3g} (tolerance {:.3g}), max abs "
        "{:.3g}, {} NaN, {} Inf",
        r.name, to_string(cls), r.rel_l2, t.rel_l2, r.max_abs, r.nan, r.inf);
  results_.push_back(std::move(r));
  return results_.back();
}

bool PrecisionChecker::all_passed() const noexcept {
  for (const auto& r : results_)
    if (!r.passed) return false;
  return true;
}

std::string PrecisionChecker::table() const {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out),
                 "{:<20} {:<7} {:>9} {:>11} {:>11} {:>5} {:>5} {:>10} {}\n", "quantity", "class",
                 "n", "rel L2", "max abs", "NaN", "Inf", "tolerance", "verdict");
  for (const auto& r : results_)
    fmt::format_to(std::back_inserter(out),
                   "{:<20} {:<7} {:>9} {:>11.3e} {:>11.3e} {:>5} {:>5} {:>10.1e} {}\n", r.name,
                   to_string(r.cls), r.count, r.rel_l2, r.max_abs, r.nan, r.inf,
                   tolerance(r.cls).rel_l2, r.passed ? "ok" : "FAILED");
  return fmt::to_string(out);
}

float round_to_bf16(float x) noexcept {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;  // Inf and NaN stay
  u += 0x7fffu + ((u >> 16) & 1u);                 // round to nearest even on the dropped 16 bits
  u &= 0xffff0000u;
  float y;
  std::memcpy(&y, &u, 4);
  return y;
}

float round_to_fp16(float x) noexcept {
  if (!std::isfinite(x)) return x;
  const float a = std::fabs(x);
  if (a >= 65520.0f) return std::copysign(INFINITY, x);  // rounds past the largest half, 65504
  if (a < 6.103515625e-05f) {                            // subnormal halves: a fixed step of 2^-24
    return std::copysign(std::nearbyint(a * 16777216.0f) / 16777216.0f, x);
  }
  int e = 0;
  std::frexp(a, &e);                            // a = m * 2^e, m in [0.5, 1)
  const float step = std::ldexp(1.0f, e - 11);  // 10 explicit mantissa bits
  return std::copysign(std::nearbyint(a / step) * step, x);
}

}  // namespace simprof
