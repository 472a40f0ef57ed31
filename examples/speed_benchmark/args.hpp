// SPDX-License-Identifier: MIT
// Command-line flags of speed_benchmark.
#pragma once

#include <string>
#include <vector>

#include "simprof/trace/schedule.hpp"

namespace simprof::examples {

struct Args {
  std::string backend = "auto";  // auto: cuda where built and a GPU is visible, else cpu
  std::vector<int> n_envs;       // several values: a sweep
  int steps = 0;                 // 0: a default per backend
  int warmup = -1;               // -1: a default per backend (CPU 5, CUDA 10); 0: none
  bool quiet = false;            // no FPS lines
  bool eager = false;            // CUDA: launch kernels one by one instead of replaying a graph
  bool sweep = false;            // CUDA: eager and graph side by side over n_envs
  std::string trace;             // write a Chrome/Perfetto trace of a few steps here
  std::string trace_mode = "kernel";  // CUDA: kernel (one event per kernel) or graph (per launch)
  bool nvtx = false;                  // CUDA: NVTX ranges for steps and stages
  bool sync = false;    // CUDA: synchronise before each step (to read a trace, not to time)
  int in_flight = -1;   // CUDA: steps the GPU may hold queued (-1: the default, 2; 0: unbounded)
  std::string json;     // write the run as JSON here
  bool memory = false;  // allocations and bytes per step and stage, the device peak
};

/// The trace schedule of a run of `steps` steps: wait until the middle, 2 warm-up steps, 3 active.
Schedule trace_schedule(int steps);

/// Parses argv; throws std::invalid_argument naming the flag and the value.
Args parse_args(int argc, char** argv);
std::string usage();

}  // namespace simprof::examples
