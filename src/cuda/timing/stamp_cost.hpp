// SPDX-License-Identifier: MIT
// The stamp costs, measured once per device (stamp_cost.cpp). Private to src/cuda/timing.
#pragma once

#include <functional>

#include "simprof/cuda/timing/stamp_cost.hpp"

namespace simprof::cuda::detail {

// `device`'s cost `what`: measured by `measure` the first time it is asked for, kept for the
// process. One lock for every device: a timer made (or stamp_cost() asked) on any device while a
// measurement runs waits for it (milliseconds, at a timer's construction). A measurement that
// throws keeps nothing.
double measured_once(int device, double StampCost::*what, const std::function<double()>& measure);
void set_dependent_launch(int device, bool dependent) noexcept;

}  // namespace simprof::cuda::detail
