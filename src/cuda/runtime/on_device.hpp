// SPDX-License-Identifier: MIT
// OnDevice: a tool's device current on this thread for a scope. Collection may run on a trace
// session's writer thread, whose current device is 0. Private to src/cuda.
#pragma once

#include <cuda_runtime_api.h>

namespace simprof::cuda::detail {

/// Makes `device` current on this thread for the object's life (the previous one back after).
class OnDevice {
 public:
  /// Switches to `device` where another one is current (a failure leaves the current one).
  explicit OnDevice(int device) {
    switched_ = cudaGetDevice(&previous_) == cudaSuccess && previous_ != device &&
                cudaSetDevice(device) == cudaSuccess;
  }
  ~OnDevice() {
    if (switched_) cudaSetDevice(previous_);
  }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

}  // namespace simprof::cuda::detail
