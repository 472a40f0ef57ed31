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

/// The bounds a comparison must stay within to pass.
struct Tolerance {
  /// Largest relative L2 error: ||variant - reference|| / ||reference||.
  double rel_l2 = 1e-2;
  double max_abs = 1e30;  ///< off unless set
};

/// One recorded comparison: its errors against the reference and its verdict.
struct PrecisionResult {
  /// The quantity compared, e.g. "positions".
  std::string name;
  /// Its class, which chose the tolerance.
  QuantityClass cls = QuantityClass::kState;
  /// Values compared, including non-finite ones.
  std::size_t count = 0;
  ///@{
  /// Relative L2 error and largest absolute difference, over the finite variant values.
  double rel_l2 = 0, max_abs = 0;
  ///@}
  ///@{
  /// NaN and infinite variant values.
  std::size_t nan = 0, inf = 0;
  ///@}
  /// Within the tolerance, with no non-finite variant value.
  bool passed = true;
};

/// Compares a reduced-precision run's quantities against a reference run's, each against the
/// tolerance of its class, and keeps the results for a table and a verdict.
class PrecisionChecker {
 public:
  /// Defaults: scalar rel 1e-3, norm rel 5e-3, state rel 1e-2 (bf16 keeps ~3 significant digits).
  PrecisionChecker();
  /// Throws std::invalid_argument for a negative or NaN tolerance.
  void set_tolerance(QuantityClass cls, Tolerance t);
  /// The tolerance quantities of class `cls` are held to.
  const Tolerance& tolerance(QuantityClass cls) const noexcept;

  /// Compares `n` values; records and returns the result. Throws std::invalid_argument for null
  /// pointers with n > 0 or for a non-finite reference value (the reference must be trustworthy).
  const PrecisionResult& compare(std::string name, QuantityClass cls, const float* reference,
                                 const float* variant, std::size_t n);

  /// Records a comparison already reduced to its sums (from several buffers, or on the device).
  /// Throws std::invalid_argument when the reference had non-finite values, naming the count and
  /// the first index.
  const PrecisionResult& record(std::string name, QuantityClass cls, const ErrorSums& sums);

  /// Every result recorded since construction or clear(), in order.
  const std::vector<PrecisionResult>& results() const noexcept { return results_; }
  /// Whether every recorded result passed (true when none was recorded).
  bool all_passed() const noexcept;
  /// Forgets the results (the tolerances stay).
  void clear() noexcept { results_.clear(); }
  /// quantity, class, n, rel L2, max abs, NaN, Inf, tolerance, verdict.
  std::string table() const;

 private:
  Tolerance tol_[3];
  std::vector<PrecisionResult> results_;
};

/// "scalar", "norm" or "state".
std::string to_string(QuantityClass c);

}  // namespace simprof
