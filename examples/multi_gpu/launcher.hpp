// SPDX-License-Identifier: MIT
// multi_gpu's own launcher: when no launcher (torchrun, mpirun, srun) started this process and
// --ranks N asks for N, it starts N copies of the program on this host with the variables a
// launcher sets (RANK, LOCAL_RANK, WORLD_SIZE, plus where rank 0 leaves NCCL's id) and waits for
// them. One failing rank stops the others.
#pragma once

#include <string>
#include <vector>

namespace simprof::examples {

struct LaunchResult {
  int failed = 0;        ///< ranks that exited non-zero or were killed
  int first_status = 0;  ///< the exit status of the first rank that failed
};

/// Runs `argv` (this program's own arguments) `ranks` times, rank r with RANK=r, LOCAL_RANK=r,
/// WORLD_SIZE=ranks and every variable in `extra_env` ("NAME=value"). Throws std::runtime_error
/// naming the call that failed to start a process.
LaunchResult launch_local_ranks(int ranks, const std::vector<std::string>& argv,
                                const std::vector<std::string>& extra_env);

}  // namespace simprof::examples
