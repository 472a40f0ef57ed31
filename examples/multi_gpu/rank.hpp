// SPDX-License-Identifier: MIT
// multi_gpu's options and what one rank runs.
#pragma once

#include <string>

#include "simprof/base/ranks.hpp"

namespace simprof::examples {

struct Args {
  int ranks = 0;                 // --ranks N: start N local processes when no launcher did
  std::string backend = "auto";  // auto: cuda where a GPU is visible and NCCL was built
  int n_envs = 0;                // per rank (default 30,000 on CUDA, 1,024 on the CPU)
  int total_envs = 0;            // --total-envs: split across the ranks instead (strong scaling)
  int steps = 0;                 // timed steps (default 1,000 on CUDA, 200 on the CPU)
  int warmup = 20;
  std::string trace;  // DIR: a trace window per rank, DIR/simprof_trace_0/rank<R>.json
  bool eager = false;
  bool quiet = false;
};

/// This rank's envs: --n-envs, or its share of --total-envs (the first total % world ranks take one
/// more).
int envs_of_rank(const Args& args, const RankInfo& ranks, int fallback);
/// One rank on the CPU engine: no communication, a trace per rank.
int run_cpu_rank(const Args& args, const RankInfo& ranks);
/// One rank on its GPU: the engine's step as a CUDA graph and an NCCL all-reduce per step.
int run_cuda_rank(const Args& args, const RankInfo& ranks);
/// Whether this build has the CUDA rank (CUDA and NCCL found) and a GPU is visible.
bool cuda_rank_available(std::string* why);

}  // namespace simprof::examples
