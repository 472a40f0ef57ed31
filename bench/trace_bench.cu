// SPDX-License-Identifier: MIT
// The kernel tracer's cost on the example engine's step at 30,000 envs (and 1,024), replayed from a
// graph and launched eagerly: tracer off vs per-kernel mode vs graph-launch mode. Off and on are
// interleaved in every iteration (CUDA events), so drift hits both. A window's fixed cost (enabling
// CUPTI, collecting its records) is timed apart: host clock, the stream drained first. Target: <=
// 10 % on the graph-replayed step at 30,000 envs on an H200.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <tuple>

#include "demo_engine/cuda_engine.hpp"
#include "ratio_reporter.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/stopwatch.hpp"
#include "simprof/cuda/trace/kernel_tracer.hpp"

namespace {

using namespace simprof;
constexpr int kSteps = 100;
constexpr int kWarm = 20;
std::map<std::tuple<int, bool, int>, std::pair<double, double>>
    g_us;                                                  // (n, graph, mode) -> off, on
std::map<std::tuple<int, bool, int>, double> g_window_ms;  // a window's enable + collect, host ms

void BM_TracerOverhead(benchmark::State& state) {
  std::string why;
  if (!cuda::device_available(&why)) {
    state.SkipWithError(("no GPU: " + why).c_str());
    return;
  }
  const int n = static_cast<int>(state.range(0));
  const bool graph = state.range(1) != 0;
  // Configurations: 0 everything (the default), 1 graph-launch mode, 2 kernels only,
  // 3 kernels only on CUPTI's own clock (no timestamp callback).
  const int config = static_cast<int>(state.range(2));
  cuda::Stream stream;
  engine::CudaEngine eng(engine::Params{}, n, stream);
  ProfilingOptions po;
  po.show_fps = false;
  StepProfiler prof(po, n);  // only for the clock the tracer aligns with
  cuda::KernelTracerOptions ko;
  ko.mode = config == 1 ? cuda::TraceMode::kGraphLaunch : cuda::TraceMode::kPerKernel;
  if (config >= 2)
    ko.runtime_api = ko.driver_api = ko.memory = ko.synchronization = ko.overhead = false;
  if (config == 3) ko.align_clock = false;
  cuda::KernelTracer tracer(prof, ko);
  if (!tracer.enabled()) {
    state.SkipWithError(tracer.disabled_reason().c_str());
    return;
  }
  cuda::GraphCache cache(stream);
  auto step = [&] {
    if (graph)
      cache.run({n}, [&](cudaStream_t s) { eng.enqueue_step(s); });
    else
      eng.enqueue_step(stream);
  };
  for (int i = 0; i < 8; ++i) step();
  // Each iteration: kSteps steps with the tracer off, then the tracer on: its start (enabling
  // CUPTI) and kWarm steps untimed, kSteps steps timed — the steady state inside a trace window —
  // and the collection untimed. The window's fixed cost (enable + collect) is reported on its own.
  // Steps: CUDA events. The window's enable and collect: host clock, the stream drained first.
  cuda::Stopwatch off_watch(stream), on_watch(stream);
  cuda::Stopwatch window(stream, cuda::StopwatchClock::kHostDrained);
  double off = 0, on = 0;
  std::vector<Span> sink;
  for (auto _ : state) {
    off_watch.start();
    for (int i = 0; i < kSteps; ++i) step();
    off_watch.stop();
    window.time([&] { tracer.start(); });
    for (int i = 0; i < kWarm; ++i) step();
    on_watch.start();
    for (int i = 0; i < kSteps; ++i) step();
    on_watch.stop();
    const double a = off_watch.last_s() * 1e3, b = on_watch.last_s() * 1e3;
    window.time([&] {
      tracer.stop_and_collect(sink);
      sink.clear();
    });
    off += a;
    on += b;
    state.SetIterationTime((a + b) * 1e-3 / (2 * kSteps));
  }
  const double window_ms = window.total_s() * 1e3;
  const double it = static_cast<double>(state.iterations()) * kSteps;
  g_us[{n, graph, config}] = {off * 1e3 / it, on * 1e3 / it};
  g_window_ms[{n, graph, config}] = window_ms / static_cast<double>(state.iterations());
  state.counters["overhead_pct"] = 100.0 * (on / off - 1.0);
}
BENCHMARK(BM_TracerOverhead)
    ->ArgsProduct({{1024, 30000}, {1, 0}, {0, 1, 2, 3}})
    ->UseManualTime()
    ->Iterations(10)  // an iteration is 240 steps plus a collection: a fixed count keeps runs short
    ->Unit(benchmark::kMicrosecond);

void print_overheads(const simprof::bench::RatioReporter&, simprof::bench::Verdicts& verdicts) {
  std::printf("\n--- kernel tracer overhead on the engine step (interleaved, CUDA events) ---\n");
  static const char* kConfig[] = {"all kinds", "graph-launch", "kernels only",
                                  "kernels, own clock"};
  std::printf("%8s %8s %19s %10s %10s %9s %14s\n", "n_envs", "step", "tracer", "off us", "on us",
              "overhead", "host window ms");
  for (const auto& [k, v] : g_us) {
    const auto [n, graph, mode] = k;
    std::printf("%8d %8s %19s %10.1f %10.1f %8.1f%% %14.2f\n", n, graph ? "graph" : "eager",
                kConfig[mode], v.first, v.second, 100.0 * (v.second / v.first - 1.0),
                g_window_ms[k]);
  }
  const auto it = g_us.find({30000, true, 0});
  const double pct = it != g_us.end() ? 100.0 * (it->second.second / it->second.first - 1.0)
                                      : simprof::bench::kNotMeasured;
  std::printf(
      "graph-replayed step at 30,000 envs, per-kernel tracing: %.1f%% [target <= 10%%: %s]\n", pct,
      verdicts.judge("tracer_graph_30000", "traced / untraced replayed step - 1, 30,000 envs", pct,
                     "%", simprof::bench::Verdicts::Goal::kAtMost, 10.0));
}

}  // namespace

int main(int argc, char** argv) {
  return simprof::bench::run_benchmarks(argc, argv, print_overheads);
}
