// SPDX-License-Identifier: MIT
// Device-side clocks, for code inside kernels.
//
//   auto c0 = simprof::cuda::clock_counter();   // SM cycles: compare readings, do not trust as
//   time auto t0 = simprof::cuda::global_timer_ns(); // nanoseconds, shared by all SMs
#pragma once

#include <cstdint>

namespace simprof::cuda {

/// The SM's 64-bit cycle counter. It counts the cycles of the multiprocessor running the thread,
/// whose clock boosts and throttles: readings are comparable with each other, and only
/// approximately convertible to seconds.
__device__ __forceinline__ std::uint64_t clock_counter() {
  return static_cast<std::uint64_t>(clock64());
}

/// The GPU's global nanosecond timer (%globaltimer): the same on every SM, updated every ~32 ns on
/// an H200.
__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace simprof::cuda
