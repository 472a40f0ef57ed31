// SPDX-License-Identifier: MIT
// PrecisionChecker: compares a step's buffers between an FP32 reference and a reduced-precision
// variant (FP16/BF16 storage, say) and says, per quantity, whether the variant is still good
// enough.
//
/* clang-format off */
//   simprof::PrecisionChecker check;                              // default tolerances per class
//   check.compare("energy", simprof::QuantityClass::kScalar, &e_ref, &e_half, 1);
//   check.compare("positions", simprof::QuantityClass::kState, ref.data(), var.data(), ref.size());
//   if (!check.all_passed()) std::fputs(check.table().c_str(), stderr);
/* clang-format on */
//
// Metrics: relative L2 error ||v - r|| / ||r|| (absolute when ||r|| = 0), max absolute error, and
// the count of NaN and Inf in the variant (any makes the check fail). Failures are logged
// (warning).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "simprof/precision/error_sums.hpp"

namespace simprof {

/// Classes of quantity, each with its own tolerance: a scalar such as total energy, a norm (a
/// reduction over a batch), a state array (positions, velocities).
enum class QuantityClass { kScalar, kNorm, kState };

struct Tolerance {
  double rel_l2 = 1e-2;
  double max_abs = 1e30;  ///< off unless set
};

struct PrecisionResult {
  std::string name;
  QuantityClass cls = QuantityClass::kState;
  std::size_t count = 0;
  double rel_l2 = 0, max_abs = 0;
  std::size_t nan = 0, inf = 0;
  bool passed = true;
};

class PrecisionChecker {
 public:
  /// Defaults: scalar rel 1e-3, norm rel 5e-3, state rel 1e-2 (bf16 keeps ~3 significant digits).
  PrecisionChecker();
  /// Throws std::invalid_argument for a negative or NaN tolerance.
  void set_tolerance(QuantityClass cls, Tolerance t);
  const Tolerance& tolerance(QuantityClass cls) const noexcept;

  /// Compares `n` values; records and returns the result. Throws std::invalid_argument for null
  /// pointers with n > 0 or for a non-finite reference value (the reference must be trustworthy).
  const PrecisionResult& compare(std::string name, QuantityClass cls, const float* reference,
                                 const float* variant, std::size_t n);

  /// Records a comparison already reduced to its sums (from several buffers, or on the device).
  /// Throws std::invalid_argument when the reference had non-finite values, naming the count and
  /// the first index.
  const PrecisionResult& record(std::string name, QuantityClass cls, const ErrorSums& sums);

  const std::vector<PrecisionResult>& results() const noexcept { return results_; }
  bool all_passed() const noexcept;
  void clear() noexcept { results_.clear(); }
  /// quantity, class, n, rel L2, max abs, NaN, Inf, tolerance, verdict.
  std::string table() const;

 private:
  Tolerance tol_[3];
  std::vector<PrecisionResult> results_;
};

std::string to_string(QuantityClass c);

}  // namespace simprof
