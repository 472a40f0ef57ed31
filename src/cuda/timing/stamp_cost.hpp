// SPDX-License-Identifier: MIT
// The stamp costs, measured once per device (stamp_cost.cpp). Private to src/cuda/timing.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

#include "simprof/cuda/timing/stamp_cost.hpp"

namespace simprof::cuda::detail {

// `device`'s cost `what`: measured by `measure` the first time it is asked for, kept for the
// process. One lock for every device: a timer made (or stamp_cost() asked) on any device while a
// measurement runs waits for it (milliseconds, at a timer's construction). A measurement that
// throws keeps nothing.
double measured_once(int device, double StampCost::*what, const std::function<double()>& measure);
void set_dependent_launch(int device, bool dependent) noexcept;

// The measurements (stamp_calibrate.cu), on `stream`; they throw CudaError.
// What one eager stamp adds to a stage it sits in, ns: `launch_stamp(at)` launches one eager stamp
// writing its time at `at`, as the stage timer launches them.
using EagerStamp = std::function<cudaError_t(unsigned long long* at)>;
double measure_eager(cudaStream_t stream, const EagerStamp& launch_stamp);
// What one stamp node adds to a chain in a graph, ns: `node_stamp` is the kernel node's function,
// taking the address its time goes to.
double measure_hop(cudaStream_t stream, const void* node_stamp);

}  // namespace simprof::cuda::detail
