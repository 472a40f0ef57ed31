// SPDX-License-Identifier: MIT
// What simprof's stamp kernels cost on a GPU, measured once per device and process on the stream of
// the first timer that needs it. DeviceStageTimer takes the eager costs off its eager stage times
// (device_stage_table() says the cost); GraphKernelTimer takes each replay's own hop off its node
// times, and hop_ns here only seeds its hop_ns() until a replay is read.
#pragma once

#include <limits>

namespace simprof::cuda {

/// The stamp costs measured on one device (NaN: no timer measured that one yet).
struct StampCost {
  /// A cost no timer measured yet.
  static constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();
  int device = -1;  ///< the CUDA device
  /// Eager stamps launch as programmatic dependents (compute capability 9.0 and up, stamp code
  /// compiled for it); else as plain launches.
  bool dependent_launch = false;
  /// What one eager stamp adds to a stage around it, launched as eager stamps are (ns).
  double eager_ns = kNotMeasured;
  /// The same for a plain launch: steps a KernelTracer traces (ns).
  double eager_plain_ns = kNotMeasured;
  /// What one stamp node adds to a chain in a graph (GraphKernelTimer's hop, when made; ns).
  double hop_ns = kNotMeasured;
};

/// The stamp costs measured so far on `device` in this process.
StampCost stamp_cost(int device);

}  // namespace simprof::cuda
