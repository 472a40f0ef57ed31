// SPDX-License-Identifier: MIT
// What storing a float as FP16 or BF16 keeps, on the host: for building reference data and tests of
// reduced-precision variants without a GPU.
//
/* clang-format off */
//   float kept = simprof::round_to_bf16(1.0f / 3.0f);   // 0.333984375
/* clang-format on */
#pragma once

namespace simprof {

/// `x` rounded to IEEE binary16 and back (round to nearest even; overflow to infinity): what
/// storing it as FP16 keeps.
float round_to_fp16(float x) noexcept;
/// `x` rounded to bfloat16 and back (round to nearest even).
float round_to_bf16(float x) noexcept;

}  // namespace simprof
