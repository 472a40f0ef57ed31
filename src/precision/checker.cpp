// SPDX-License-Identifier: MIT
#include "simprof/precision/checker.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "simprof/base/log.hpp"

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

}  // namespace simprof
