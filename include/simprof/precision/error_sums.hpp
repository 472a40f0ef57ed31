// SPDX-License-Identifier: MIT
// ErrorSums: what comparing a reduced-precision buffer with its FP32 reference reduces to. Sums
// add, so a quantity spread over several buffers is compared as one, and a device reduction
// (cuda::DeviceComparer) hands its sums to the same checker.
//
/* clang-format off */
//   simprof::ErrorSums pos = simprof::error_sums(ref_x, var_x, n);
//   pos += simprof::error_sums(ref_y, var_y, n);
//   checker.record("positions", simprof::QuantityClass::kState, pos);
/* clang-format on */
#pragma once

#include <cstddef>

namespace simprof {

/// What a comparison reduces to. Sums add, so a quantity spread over several buffers (x, y, z) is
/// compared as one, and a device reduction (cuda::DeviceComparer) can hand its sums to the checker.
struct ErrorSums {
  std::size_t count = 0;          ///< values compared, including non-finite ones
  double diff2 = 0;               ///< sum of (variant - reference)^2 over finite variant values
  double ref2 = 0;                ///< sum of reference^2 over the same values
  double var2 = 0;                ///< sum of variant^2 over the same values
  double max_abs = 0;             ///< largest |variant - reference| over the same values
  std::size_t nan = 0, inf = 0;   ///< non-finite variant values
  std::size_t bad_reference = 0;  ///< non-finite reference values: the comparison is refused
  std::size_t first_bad_reference = static_cast<std::size_t>(-1);  ///< index of the first one

  /// Adds `o`'s sums, as if its values followed this one's (max_abs: the larger of the two).
  ErrorSums& operator+=(const ErrorSums& o) noexcept;
};
/// \var ErrorSums::nan
/// Non-finite variant values: NaN (and `inf`, infinite ones).

/// The sums of `n` host values (null pointers with n > 0: std::invalid_argument).
ErrorSums error_sums(const float* reference, const float* variant, std::size_t n);

}  // namespace simprof
