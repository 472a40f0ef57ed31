// SPDX-License-Identifier: MIT
// What the GPU truth costs: a step (graph replay or eager launches) in six loops over the same
// stream, interleaved in every iteration and timed with CUDA events:
//   * plain   the bare loop, steps in flight unbounded (the baseline)
//   * paced   a StepPacer with the default options: at most 2 steps in flight, a timed end event
//             after every 8th step (and a start event), an untimed one after the others
//   * nospan  the same without start events
//   * mark1   a timed end event after every step (each step's own period: the old default)
//   * timed   a DeviceStageTimer with the default options (paced as above, stamps on 1 step in 16)
//   * never   a DeviceStageTimer that samples no step after the first (the unstamped graph alone)
// Two workloads. The verdicts come from the fixed one: 16 kernels of known duration (spinning on
// the GPU's global timer) laid out like the demo engine's stages — 4 substeps of collide, solve and
// integrate under physics, an IMU, two render passes, a recorder — the 1,024-env shape a few blocks
// of 6 us kernels, the 30,000-env shape kernels of 11 us over every SM; its work per step never
// changes, so a loop's cost is the tool's. The demo engine's own step (each loop its own engine,
// whose state drifts differently: +-1-4 % between loops of one run) is a second table, without
// verdicts. Targets: pacing <= 1 % (1,024 and 30,000 envs, graph and eager); the stage timer (timed
// against paced: its own cost; the two together against the bare loop beside it) <= 3 % on the
// replayed step at 1,024 envs and <= 1 % at 30,000, <= 3 % eager. --verdicts FILE writes the
// verdicts; a configuration that did not run is "not measured".
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "demo_engine/cuda_engine.hpp"
#include "ratio_reporter.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"
#include "simprof/cuda/timing/step_pacer.hpp"
#include "simprof/cuda/timing/stopwatch.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/timers/timer_view.hpp"

namespace {

using namespace simprof;
constexpr int kSteps = 200;  // steps per loop per iteration

enum Loop { kPlain, kPaced, kNoSpan, kMark1, kTimed, kNever, kLoops };
const char* const kLoopName[] = {"plain", "paced", "nospan", "mark1", "timed", "never"};
enum Work { kFixed, kEngine };

__global__ void fixed_spin(unsigned long long ns) {
  const std::uint64_t t0 = global_timer_ns();
  while (global_timer_ns() - t0 < ns) {
  }
}

// The fixed workload: stages like the demo engine's, each kernel a spin of known length (see the
// top).
struct FixedWork {
  StepProfiler& prof;
  int blocks, threads;
  unsigned long long ns;
  FixedWork(StepProfiler& p, int n_envs)
      : prof(p),
        blocks(n_envs >= 30000 ? 4 * 132 : 8),
        threads(n_envs >= 30000 ? 256 : 64),
        ns(n_envs >= 30000 ? 11'000 : 6'000) {}
  void kernel(cudaStream_t s) { fixed_spin<<<blocks, threads, 0, s>>>(ns); }
  void enqueue_step(cudaStream_t s) {
    {
      auto physics = prof.stage("physics");
      for (int k = 0; k < 4; ++k) {
        for (const char* stage : {"physics/collide", "physics/solve", "physics/integrate"}) {
          auto st = prof.stage(stage);
          kernel(s);
        }
      }
    }
    {
      auto st = prof.stage("sensors/Imu");
      kernel(s);
    }
    {
      auto st = prof.stage("rendering");
      kernel(s);
      kernel(s);
    }
    auto st = prof.stage("recorders");
    kernel(s);
  }
};

ProfilingOptions quiet() {
  ProfilingOptions o;
  o.show_fps = false;
  return o;
}

struct Variant {
  StepProfiler prof;
  std::optional<engine::CudaEngine> eng;
  std::optional<FixedWork> fixed;
  std::optional<cuda::StepPacer> pacer;
  std::optional<cuda::DeviceStageTimer> dev;  // given to the cache: its stamps go into the graphs
  cuda::GraphCache cache;
  cudaStream_t stream;
  bool graph;
  int n_envs;
  Variant(Work work, Loop loop, int n, bool graph_mode, cudaStream_t s)
      : prof(quiet(), n), cache(s), stream(s), graph(graph_mode), n_envs(n) {
    if (work == kEngine) {
      eng.emplace(engine::Params{}, n, s);
      eng->attach(prof);
    } else {
      fixed.emplace(prof, n);
    }
    cuda::StepPacerOptions po;
    if (loop == kNoSpan) po.span_every = 0;
    if (loop == kMark1) po.mark_every = 1;
    if (loop == kPaced || loop == kNoSpan || loop == kMark1) pacer.emplace(prof, s, po);
    if (loop == kTimed) dev.emplace(prof, s);
    if (loop == kNever) {
      cuda::DeviceStageTimerOptions o;
      o.sample_every = 1 << 30;
      dev.emplace(prof, s, o);
    }
    if (dev) cache.attach(dev->instrumentation());
  }
  void enqueue(cudaStream_t s) {
    if (eng)
      eng->enqueue_step(s);
    else
      fixed->enqueue_step(s);
  }
  void steps(int n) {
    for (int i = 0; i < n; ++i) {
      auto step = prof.step();
      if (graph)
        cache.run({n_envs}, [&](cudaStream_t st) { enqueue(st); });
      else
        enqueue(stream);
    }
  }
};

struct Result {
  double us[kLoops] = {};     // mean us per step
  double ratio[kLoops] = {};  // median over iterations of (this loop / its baseline) - 1
  double total = 0;           // the same for the timed loop against the bare one
  std::uint64_t untimed = 0, joined = 0;
};
std::map<std::tuple<int, int, int>, Result> g_results;  // (work, graph, n_envs)

void BM_Truth(benchmark::State& state) {
  std::string why;
  if (!cuda::device_available(&why)) {
    state.SkipWithError(("no GPU: " + why).c_str());
    return;
  }
  const Work work = state.range(0) != 0 ? kEngine : kFixed;
  const bool graph = state.range(1) != 0;
  const int n = static_cast<int>(state.range(2));
  cuda::Stream stream;
  // Made in an interleaved order too, and ~1 ms of steps each before timing.
  std::unique_ptr<Variant> v[kLoops];
  for (int l = 0; l < kLoops; ++l)
    v[l] = std::make_unique<Variant>(work, Loop(l), n, graph, stream);
  for (auto& x : v) x->steps(10);
  stream.synchronize();
  std::vector<cuda::Stopwatch> watch;
  for (int l = 0; l < kLoops; ++l) watch.emplace_back(stream.get());
  double ms[kLoops] = {};
  std::vector<double> per[kLoops];  // ms per iteration
  int rotation = 0;
  for (auto _ : state) {
    for (int k = 0; k < kLoops; ++k) {
      const int l = (k + rotation) % kLoops;
      watch[l].start();
      v[l]->steps(kSteps);
      watch[l].stop();
    }
    rotation = (rotation + 1) % kLoops;
    double total = 0;
    for (int l = 0; l < kLoops; ++l) {
      const double t = watch[l].last_s() * 1e3;
      ms[l] += t;
      per[l].push_back(t);
      total += t;
    }
    state.SetIterationTime(total * 1e-3 / (kLoops * kSteps));
  }
  for (const Loop l : {kTimed, kNever}) v[l]->dev->synchronize();
  Result r;
  for (int l = 0; l < kLoops; ++l)
    r.us[l] = ms[l] * 1e3 / (static_cast<double>(state.iterations()) * kSteps);
  // Each loop against its baseline in the same iteration, the median over iterations: robust to
  // the clock drifting between iterations.
  auto median_ratio = [&](int l, int base) {
    std::vector<double> q;
    for (std::size_t i = 0; i < per[l].size(); ++i) q.push_back(per[l][i] / per[base][i] - 1.0);
    std::nth_element(q.begin(), q.begin() + static_cast<long>(q.size() / 2), q.end());
    return q.empty() ? simprof::bench::kNotMeasured : q[q.size() / 2];
  };
  for (int l = 0; l < kLoops; ++l) r.ratio[l] = median_ratio(l, l == kTimed ? kPaced : kPlain);
  r.total = median_ratio(kTimed, kPlain);  // pacer + stage timer against the bare loop
  r.untimed = v[kTimed]->dev->dropped();
  r.joined = v[kTimed]->dev->joined();
  state.counters["pacing_pct"] = 100.0 * r.ratio[kPaced];
  state.counters["timer_pct"] = 100.0 * r.ratio[kTimed];
  g_results[{work, graph ? 1 : 0, n}] = r;
}
BENCHMARK(BM_Truth)
    ->ArgNames({"engine", "graph", "n_envs"})
    ->Args({0, 1, 1024})
    ->Args({0, 1, 30000})
    ->Args({0, 0, 1024})
    ->Args({0, 0, 30000})
    ->Args({1, 1, 1024})
    ->Args({1, 1, 30000})
    ->Args({1, 0, 1024})
    ->Args({1, 0, 30000})
    ->Iterations(30)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void print_ratios(const simprof::bench::RatioReporter&, simprof::bench::Verdicts& v) {
  using Goal = simprof::bench::Verdicts::Goal;
  if (std::string why; !cuda::device_available(&why))
    std::printf("\nno GPU: nothing measured (%s)\n", why.c_str());
  for (const Work work : {kFixed, kEngine}) {
    std::printf(
        "\n--- the GPU truth's cost, %s: us per step on the GPU (CUDA events), %d-step loops "
        "interleaved ---\n%6s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n",
        work == kFixed ? "fixed work (16 spins of known length; the verdicts)"
                       : "the demo engine (each loop its own engine; no verdicts)",
        kSteps, "mode", "n_envs", kLoopName[0], kLoopName[1], kLoopName[2], kLoopName[3],
        kLoopName[4], kLoopName[5], "pacing", "nospan", "mark1", "timer", "never", "total",
        "untimed");
    for (const auto& [key, r] : g_results) {
      const auto [w, graph, n] = key;
      if (w != work) continue;
      std::printf(
          "%6s %8d %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %7.2f%% %7.2f%% %7.2f%% %7.2f%% %7.2f%% "
          "%7.2f%% %4llu/%llu\n",
          graph ? "graph" : "eager", n, r.us[kPlain], r.us[kPaced], r.us[kNoSpan], r.us[kMark1],
          r.us[kTimed], r.us[kNever], 100.0 * r.ratio[kPaced], 100.0 * r.ratio[kNoSpan],
          100.0 * r.ratio[kMark1], 100.0 * r.ratio[kTimed], 100.0 * r.ratio[kNever],
          100.0 * r.total, static_cast<unsigned long long>(r.untimed),
          static_cast<unsigned long long>(r.joined + r.untimed));
    }
  }
  std::printf(
      "(medians over iterations of per-iteration ratios) pacing, nospan, mark1, never: vs plain; "
      "timer: timed vs paced (the stage timer's own cost); total: timed vs plain (pacer + stage "
      "timer); untimed: sampled steps lost / sampled\n");
  // One verdict per configuration the benchmark registers: a configuration that did not run
  // (filtered out, no GPU) is not measured.
  for (const int graph : {1, 0})
    for (const int n : {1024, 30000}) {
      const auto it = g_results.find({kFixed, graph, n});
      const bool ran = it != g_results.end();
      const std::string where = fmt::format("{}, {} envs", graph ? "replayed graph" : "eager",
                                            n == 1024 ? "1,024" : "30,000");
      const double pacing = ran ? 100.0 * it->second.ratio[kPaced] : simprof::bench::kNotMeasured;
      std::printf(
          "pacing (2 steps in flight) vs unbounded, fixed work, %s: %+.2f %% [target <= 1%%: %s]\n",
          where.c_str(), pacing,
          v.judge(fmt::format("pacing_{}_{}", graph ? "graph" : "eager", n),
                  "paced / unbounded loop - 1, " + where, pacing, "%", Goal::kAtMost, 1.0));
      const double target = graph && n >= 30000 ? 1.0 : 3.0;
      const double timer = ran ? 100.0 * it->second.ratio[kTimed] : simprof::bench::kNotMeasured;
      const double total = ran ? 100.0 * it->second.total : simprof::bench::kNotMeasured;
      std::printf(
          "device stage timer vs the same paced loop without it, fixed work, %s: %+.2f %% [target "
          "<= %.0f%%: %s]; pacer + timer vs the bare loop: %+.2f %%\n",
          where.c_str(), timer, target,
          v.judge(fmt::format("stage_timer_{}_{}", graph ? "graph" : "eager", n),
                  "paced loop with the stage timer / paced loop - 1, " + where, timer, "%",
                  Goal::kAtMost, target),
          total);
    }
}

}  // namespace

int main(int argc, char** argv) { return simprof::bench::run_benchmarks(argc, argv, print_ratios); }
