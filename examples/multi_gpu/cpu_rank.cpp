// SPDX-License-Identifier: MIT
// A rank on the CPU engine: its own envs, its FPS line, its trace file; no communication.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "demo_engine/cpu_engine.hpp"
#include "rank.hpp"
#include "simprof/simprof.hpp"

namespace simprof::examples {

#if !SIMPROF_MULTI_GPU_NCCL
bool cuda_rank_available(std::string* why) {
  if (why) *why = "this build has no CUDA backend with NCCL (multi_gpu runs on the CPU)";
  return false;
}
int run_cuda_rank(const Args&, const RankInfo&) { return 2; }
#endif

int run_cpu_rank(const Args& a, const RankInfo& ranks) {
  const int n_envs = envs_of_rank(a, ranks, 1024);
  const int steps = a.steps ? a.steps : 200;
  ProfilingOptions o = ProfilingOptions::from_env();
  if (a.quiet) o.show_fps = false;
  o.stats_window = static_cast<std::size_t>(steps);
  StepProfiler prof(o, n_envs);  // its FPS line says the rank: "[rank 1/2] Running at ..."
  engine::CpuEngine eng(engine::Params{}, n_envs);
  for (int i = 0; i < a.warmup; ++i) eng.step();  // first touches stay out
  eng.attach(prof);
  std::optional<TraceSession> trace;
  if (!a.trace.empty()) {
    TraceOptions t;
    t.schedule = Schedule{std::max(0, steps / 2 - 5), 2, 3, 1, 0};
    t.dir = a.trace;
    t.ranks = ranks;
    trace.emplace(prof, t);
  }
  for (int i = 0; i < steps; ++i) {
    auto step = prof.step();
    eng.step();
  }
  prof.fps().flush();
  const auto st = prof.stats("step");
  fmt::print(
      "rank {}/{} (cpu, {} envs, {} steps): {} env-steps/s, mean step {:.1f} us (host clock)\n",
      ranks.rank, ranks.world_size, n_envs, steps, format_thousands(n_envs / st.mean, 0),
      st.mean * 1e6);
  if (trace)
    for (const auto& f : trace->files()) fmt::print("rank {}: wrote {}\n", ranks.rank, f);
  return 0;
}

}  // namespace simprof::examples
