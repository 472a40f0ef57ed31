// SPDX-License-Identifier: MIT
// A build without CUDA: `simprof run` times on the host clock only.
#include "device_side.hpp"

namespace simprof::run {

bool built_with_cuda() noexcept { return false; }
bool has_cuda_context() noexcept { return false; }

std::unique_ptr<DeviceSide> make_device_side(StepProfiler&, Sampling, DeviceSide::Sink,
                                             std::string& why) {
  why = "this simprof was built without CUDA";
  return nullptr;
}

}  // namespace simprof::run
