// SPDX-License-Identifier: MIT
// The cost of per-env timers: the example engine's fused solver kernel plain and instrumented (four
// rows: the whole solve and three chained phases per substep), interleaved in every iteration and
// timed with CUDA events. Prints the overhead; target <= 2 % at 30,000 envs on an H200.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>

#include "demo_engine/cuda_engine.hpp"
#include "ratio_reporter.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/device_timer_buffer.hpp"
#include "simprof/cuda/timing/stopwatch.hpp"

namespace {

using namespace simprof;
constexpr int kLaunches = 20;

std::map<int, double> g_overhead;  // n_envs -> timed / plain - 1
std::map<int, std::pair<double, double>> g_us;

void BM_SolverTimers(benchmark::State& state) {
  std::string why;
  if (!cuda::device_available(&why)) {
    state.SkipWithError(("no GPU: " + why).c_str());
    return;
  }
  const int n = static_cast<int>(state.range(0));
  cuda::Stream stream;
  engine::CudaEngine eng(engine::Params{}, n, stream);
  cuda::DeviceTimerBuffer timers({"solve", "forces", "contacts", "integrate"}, n);
  const TimerView v = timers.view();
  for (int i = 0; i < 5; ++i) {
    eng.enqueue_solver(stream, nullptr);
    eng.enqueue_solver(stream, &v);
  }
  cuda::Stopwatch plain_watch(stream), timed_watch(stream);
  double plain = 0, timed = 0;
  for (auto _ : state) {
    plain_watch.start();
    for (int i = 0; i < kLaunches; ++i) eng.enqueue_solver(stream, nullptr);
    plain_watch.stop();
    timed_watch.start();
    for (int i = 0; i < kLaunches; ++i) eng.enqueue_solver(stream, &v);
    timed_watch.stop();
    const double p = plain_watch.last_s() * 1e3, t = timed_watch.last_s() * 1e3;
    plain += p;
    timed += t;
    state.SetIterationTime((p + t) * 1e-3 / (2 * kLaunches));
  }
  state.counters["overhead_pct"] = 100.0 * (timed / plain - 1.0);
  g_overhead[n] = timed / plain - 1.0;
  g_us[n] = {plain * 1e3 / (static_cast<double>(state.iterations()) * kLaunches),
             timed * 1e3 / (static_cast<double>(state.iterations()) * kLaunches)};
}
BENCHMARK(BM_SolverTimers)
    ->Arg(1024)
    ->Arg(30000)
    ->Arg(262144)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void print_overheads(const simprof::bench::RatioReporter&, simprof::bench::Verdicts& v) {
  std::printf("\n--- solver kernel, plain vs per-env timers (interleaved, CUDA events) ---\n");
  std::printf("%9s %12s %12s %10s\n", "n_envs", "plain us", "timed us", "overhead");
  for (const auto& [n, o] : g_overhead)
    std::printf("%9d %12.2f %12.2f %9.2f%%\n", n, g_us[n].first, g_us[n].second, 100.0 * o);
  const auto it = g_overhead.find(30000);
  const double pct = it != g_overhead.end() ? 100.0 * it->second : simprof::bench::kNotMeasured;
  std::printf("overhead at 30,000 envs: %.2f%% [target <= 2%%: %s]\n", pct,
              v.judge("per_env_timers_30000", "timed / plain solver kernel - 1, 30,000 envs", pct,
                      "%", simprof::bench::Verdicts::Goal::kAtMost, 2.0));
}

}  // namespace

int main(int argc, char** argv) {
  return simprof::bench::run_benchmarks(argc, argv, print_overheads);
}
