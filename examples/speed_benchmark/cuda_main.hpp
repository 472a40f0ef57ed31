// SPDX-License-Identifier: MIT
// The CUDA side of speed_benchmark (built with the CUDA backend).
#pragma once

#include "args.hpp"
#include "run_record.hpp"

namespace simprof::examples {

/// True when a CUDA device can be used.
bool cuda_device_visible();
/// Runs the CUDA engine: eager or graph replay, or a sweep over n_envs comparing the two.
/// `json`: where the runs are recorded (null without --json).
int run_cuda(const Args& args, JsonReport* json);

}  // namespace simprof::examples
