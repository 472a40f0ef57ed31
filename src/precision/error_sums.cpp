// SPDX-License-Identifier: MIT
#include "simprof/precision/error_sums.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace simprof {

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

}  // namespace simprof
