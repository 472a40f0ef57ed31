// SPDX-License-Identifier: MIT
#include "simprof/precision/rounding.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace simprof {

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
