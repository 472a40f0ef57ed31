// SPDX-License-Identifier: MIT
// RankInfo: which process of a multi-process run this is. One process per GPU is how batched
// simulators scale past one GPU (torchrun, mpirun, srun or our own examples' --ranks); every trace
// and FPS line says its rank, and the trace files of one window are named rank<R>.json so that
// Holistic Trace Analysis reads them together.
//
/* clang-format off */
//   simprof::RankInfo r = simprof::RankInfo::from_env();   // RANK/LOCAL_RANK/WORLD_SIZE, ...
//   cudaSetDevice(r.local_rank);
//   fmt::print("rank {} of {} ({})\n", r.rank, r.world_size, r.source);
/* clang-format on */
//
// The launchers' variables, first match wins: torchrun and most launchers (RANK, LOCAL_RANK,
// WORLD_SIZE), Open MPI (OMPI_COMM_WORLD_RANK, _LOCAL_RANK, _SIZE), MPICH/Intel MPI/Hydra
// (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID), Slurm (SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS). None
// set: rank 0 of
// 1. A value that is not a number, or a rank outside [0, world size), is an error naming the
// variable, its value and what was expected.
#pragma once

#include <functional>
#include <string>

namespace simprof {

/// Which process of a multi-process run this is: its rank, local rank and the world size.
struct RankInfo {
  int rank = 0;        ///< this process, in [0, world_size)
  int local_rank = 0;  ///< this process on its host (the GPU it normally takes)
  int world_size = 1;  ///< processes in the run
  /// Where the values came from: "default", "explicit", or the launcher variables read
  /// ("RANK/WORLD_SIZE", "OMPI_COMM_WORLD_*", "PMI_*", "SLURM_*").
  std::string source = "default";

  /// Throws std::invalid_argument naming the field when world_size < 1, rank outside
  /// [0, world_size) or local_rank < 0.
  void validate() const;
  /// True when the run has more than one process.
  bool distributed() const noexcept { return world_size > 1; }

  /// Rank, local rank and world size given by the program (validated).
  static RankInfo explicit_ranks(int rank, int world_size, int local_rank = -1);
  /// From the launcher's environment (see above); `getenv` is injectable for tests.
  static RankInfo from_env(const std::function<const char*(const char*)>& getenv = nullptr);
};

}  // namespace simprof
