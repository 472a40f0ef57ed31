// SPDX-License-Identifier: MIT
// Command-line flags of speed_benchmark.
#pragma once

#include <string>
#include <vector>

namespace simprof::examples {

struct Args {
  std::string backend = "auto";  // auto: cuda where built and a GPU is visible, else cpu
  std::vector<int> n_envs;       // several values: a sweep
  int steps = 0;                 // 0: a default per backend
  int warmup = 0;
  bool quiet = false;  // no FPS lines
  bool eager = false;  // CUDA: launch kernels one by one instead of replaying a graph
  bool sweep = false;  // CUDA: eager and graph side by side over n_envs
  std::string trace;   // later: a trace file
};

/// Parses argv; throws std::invalid_argument naming the flag and the value.
Args parse_args(int argc, char** argv);
std::string usage();

}  // namespace simprof::examples
