// SPDX-License-Identifier: MIT
// multi_gpu: the demo engine with its envs split across ranks, one process per GPU, an NCCL
// all-reduce per step, a CUDA graph per rank, an FPS line per rank and one trace file per rank
// that Holistic Trace Analysis reads as one run (and Perfetto opens together).
//
//   multi_gpu --ranks 2 --n-envs 30000 --steps 1000 --trace traces     (starts 2 processes)
//   torchrun --nproc-per-node 2 multi_gpu --trace traces               (or mpirun -n 2, srun)
//   multi_gpu --backend cpu --ranks 2 --trace traces                   (no GPU, no NCCL)
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.hpp"
#include "launcher.hpp"
#include "rank.hpp"

namespace simprof::examples {
namespace {

constexpr const char* kUsage =
    "multi_gpu [--ranks N] [--backend auto|cpu|cuda] [--n-envs N] [--steps S] [--warmup W]\n"
    "          [--total-envs N] [--trace DIR] [--eager] [--quiet]\n"
    "  --ranks N     start N processes on this host (without it: the launcher's ranks, or 1)\n"
    "  --n-envs N    envs per rank (weak scaling: the same N on 1 and on 2 GPUs)\n"
    "  --total-envs N  envs split across the ranks instead (strong scaling)\n";

Args parse(int argc, char** argv) {
  Args a;
  cli::Flags(kUsage)
      .integer("--ranks", a.ranks, 1, 1024)
      .choice("--backend", a.backend, {"auto", "cpu", "cuda"})
      .integer("--n-envs", a.n_envs, 1)
      .integer("--total-envs", a.total_envs, 1)
      .integer("--steps", a.steps, 1)
      .integer("--warmup", a.warmup, 0)
      .text("--trace", a.trace)
      .flag("--eager", a.eager)
      .flag("--quiet", a.quiet)
      .parse(argc, argv);
  return a;
}

}  // namespace

int envs_of_rank(const Args& a, const RankInfo& r, int fallback) {
  if (a.n_envs) return a.n_envs;
  if (!a.total_envs) return fallback;
  if (a.total_envs < r.world_size)
    throw std::invalid_argument(
        fmt::format("--total-envs {} is fewer than the {} ranks", a.total_envs, r.world_size));
  return a.total_envs / r.world_size + (r.rank < a.total_envs % r.world_size ? 1 : 0);
}

}  // namespace simprof::examples

int main(int argc, char** argv) try {
  using namespace simprof::examples;
  const Args a = parse(argc, argv);
  const simprof::RankInfo ranks = simprof::RankInfo::from_env();
  if (a.n_envs && a.total_envs)
    throw std::invalid_argument("--n-envs and --total-envs: give one (per rank, or split)");
  if (ranks.source == "default" && a.ranks > 1) {
    // No launcher started us: start the ranks ourselves, with a file for NCCL's id.
    const std::string id_file = fmt::format("/tmp/simprof_nccl_{}.id", ::getpid());
    std::vector<std::string> env = {"SIMPROF_NCCL_ID_FILE=" + id_file};
    if (!std::getenv("NCCL_NVLS_ENABLE")) env.push_back("NCCL_NVLS_ENABLE=0");
    fmt::print("multi_gpu: starting {} ranks on this host\n", a.ranks);
    std::fflush(stdout);
    const LaunchResult r =
        launch_local_ranks(a.ranks, std::vector<std::string>(argv, argv + argc), env);
    std::remove(id_file.c_str());
    if (r.failed) {
      std::fprintf(stderr, "multi_gpu: %d of %d ranks failed (first exit status %d)\n", r.failed,
                   a.ranks, r.first_status);
      return r.first_status ? r.first_status : 1;
    }
    fmt::print("multi_gpu: {} ranks finished\n", a.ranks);
    return 0;
  }
  if (a.ranks > 0 && ranks.source != "default" && a.ranks != ranks.world_size)
    throw std::invalid_argument(fmt::format("--ranks {} but the launcher ({}) started {} ranks",
                                            a.ranks, ranks.source, ranks.world_size));
  std::string why;
  const bool cuda = a.backend == "cuda" || (a.backend == "auto" && cuda_rank_available(&why));
  if (a.backend == "cuda" && !cuda_rank_available(&why))
    throw std::invalid_argument("--backend cuda: " + why);
  return cuda ? run_cuda_rank(a, ranks) : run_cpu_rank(a, ranks);
} catch (const std::exception& e) {
  std::fprintf(stderr, "multi_gpu: %s\n", e.what());
  return 2;
}
