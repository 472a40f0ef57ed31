// SPDX-License-Identifier: MIT
// What the stamping timers count with, CUDA-free: which steps they sample, and a running statistic
// of what they read. Private to src/cuda/timing (test_stamp_math tests it without a GPU).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

namespace simprof::cuda::detail {

// One step in `every`, the one whose index modulo `every` is `offset`.
struct SampleSchedule {
  std::uint64_t every = 1;
  std::uint64_t offset = 0;
  bool sampled(std::uint64_t step) const noexcept { return step % every == offset; }

  // From a timer's options (`options` names them in the error): every >= 1; offset -1 is 8 where
  // every is above 8, else 0; any other offset within [0, every). Throws std::invalid_argument.
  static SampleSchedule checked(std::string_view options, int every, int offset) {
    if (every < 1)
      throw std::invalid_argument(
          fmt::format("simprof: {}.sample_every = {} (expected >= 1)", options, every));
    if (offset == -1) offset = every > 8 ? 8 : 0;
    if (offset < 0 || offset >= every)
      throw std::invalid_argument(
          fmt::format("simprof: {}.sample_offset = {} (expected -1, or 0 to sample_every - 1 = {})",
                      options, offset, every - 1));
    return {static_cast<std::uint64_t>(every), static_cast<std::uint64_t>(offset)};
  }
};

// The count, sum, least and greatest of what was added.
struct RunningStat {
  std::uint64_t count = 0;
  double sum = 0, min = 0, max = 0;
  void add(double x) noexcept {
    min = count == 0 ? x : std::min(min, x);
    max = count == 0 ? x : std::max(max, x);
    sum += x;
    ++count;
  }
  // NaN before anything was added.
  double mean() const noexcept {
    return count ? sum / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN();
  }
};

}  // namespace simprof::cuda::detail
