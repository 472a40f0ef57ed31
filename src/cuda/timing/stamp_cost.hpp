// SPDX-License-Identifier: MIT
// The stamp costs, measured once per device (stamp_cost.cpp). Private to src/cuda/timing.
#pragma once

#include <functional>

#include "simprof/cuda/timing/stamp_cost.hpp"

namespace simprof::cuda::detail {

// `device`'s cost `what`: measured by `measure` the first time it is asked for (another thread
// asking meanwhile waits for it), kept for the process. A measurement that throws keeps nothing.
double measured_once(int device, double StampCost::*what, const std::function<double()>& measure);
void set_dependent_launch(int device, bool dependent) noexcept;

}  // namespace simprof::cuda::detail
