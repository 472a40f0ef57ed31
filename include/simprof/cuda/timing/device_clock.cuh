// SPDX-License-Identifier: MIT
// Device-side clocks for code inside kernels: the same functions as simprof/timers.hpp, which
// compiles for host and device alike, named in the CUDA backend's namespace too.
//
/* clang-format off */
//   auto c0 = simprof::cuda::clock_counter();     // SM cycles: compare readings, do not trust as time
//   auto t0 = simprof::cuda::global_timer_ns();   // nanoseconds, shared by all SMs
/* clang-format on */
#pragma once

#include "simprof/timers/timer_view.hpp"

namespace simprof::cuda {
using simprof::clock_counter;
using simprof::global_timer_ns;
}  // namespace simprof::cuda
