// SPDX-License-Identifier: MIT
// The GPU examples' first check.
#pragma once

#include <string>

#include <fmt/format.h>

#include "simprof/cuda/runtime/buffer.hpp"

namespace simprof::examples {

/// Whether a GPU is visible; says why not (and that `program` needs one) otherwise.
inline bool gpu_or_say_why(const char* program) {
  std::string why;
  if (cuda::device_available(&why)) return true;
  fmt::print("{} needs a GPU: {}\n", program, why);
  return false;
}

}  // namespace simprof::examples
