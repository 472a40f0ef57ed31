// SPDX-License-Identifier: MIT
#include "cuda_main.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "engine/cuda_engine.hpp"
#include "simprof/cuda/buffer.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/kernel_tracer.hpp"
#include "simprof/cuda/nvtx.hpp"
#include "simprof/cuda/stage_timer.hpp"
#include "simprof/cuda/stream.hpp"
#include "simprof/simprof.hpp"

namespace simprof::examples {

bool cuda_device_visible() { return cuda::device_available(); }

namespace {

struct RunResult {
  double us_per_step = 0;  // wall time between two device synchronisations, per step
  double fps = 0;          // env-steps per second
};

// Runs `steps` steps after `warmup` (graph mode: the cache's own warm-up and capture happen inside
// the warm-up), timed from one stream synchronisation to the next.
RunResult timed_run(const engine::Params& params, int n_envs, bool graph, int warmup, int steps,
                    const cuda::Stream& stream) {
  engine::CudaEngine eng(params, n_envs, stream);
  ProfilingOptions o;
  o.show_fps = false;
  StepProfiler prof(o, n_envs);
  eng.attach(prof);
  cuda::GraphCache cache(stream);
  const cuda::GraphKey key{n_envs};
  auto one = [&] {
    auto step = prof.step();
    if (graph)
      cache.run(key, [&](cudaStream_t s) { eng.enqueue_step(s); });
    else
      eng.enqueue_step(stream);
  };
  for (int i = 0; i < warmup; ++i) one();
  stream.synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) one();
  stream.synchronize();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {s / steps * 1e6, static_cast<double>(n_envs) * steps / s};
}

// A run with the FPS line, host stage statistics and device stage times.
void profiled_run(const engine::Params& params, int n_envs, bool graph, int warmup, int steps,
                  bool quiet, const cuda::Stream& stream, const Args& args) {
  engine::CudaEngine eng(params, n_envs, stream);
  ProfilingOptions o = ProfilingOptions::from_env();
  if (quiet) o.show_fps = false;
  o.stats_window = static_cast<std::size_t>(steps);
  StepProfiler prof(o, n_envs);
  eng.attach(prof);
  // Device stage timestamps would show up in a kernel trace as kernels of their own: off when
  // tracing.
  std::optional<cuda::DeviceStageTimer> dev;
  if (args.trace.empty()) dev.emplace(prof, stream);  // before the cache: outlives its graphs
  std::optional<cuda::NvtxRanges> nvtx;
  if (args.nvtx) nvtx.emplace(prof);
  std::optional<TraceSession> trace;
  std::optional<cuda::KernelTracer> tracer;
  if (!args.trace.empty()) {
    trace.emplace(prof, TraceOptions{trace_schedule(warmup + steps)});
    cuda::KernelTracerOptions ko;
    ko.mode =
        args.trace_mode == "graph" ? cuda::TraceMode::kGraphLaunch : cuda::TraceMode::kPerKernel;
    tracer.emplace(prof, ko);
    trace->add_source(&*tracer);
    trace->on_trace_ready([&](const Trace& t, std::uint64_t) {
      write_chrome_trace(t, args.trace);
      fmt::print("\nwrote {} ({} spans, {} dropped): open it in https://ui.perfetto.dev\n{}\n",
                 args.trace, t.spans.size(), t.dropped, analyze(t).report(10));
    });
  }
  cuda::GraphCache cache(stream);
  const cuda::GraphKey key{n_envs};
  fmt::print(
      "speed_benchmark: backend cuda ({}), {} envs x {} spheres, {} kernels per step, {} steps\n",
      graph ? "graph replay" : "eager launches", n_envs, params.n_spheres, eng.kernels_per_step(),
      steps);
  for (int i = 0; i < warmup + steps; ++i) {
    if (args.sync) stream.synchronize();  // lines the timelines up call for call; halves throughput
    auto step = prof.step();
    if (graph)
      cache.run(key, [&](cudaStream_t s) { eng.enqueue_step(s); });
    else
      eng.enqueue_step(stream);
  }
  stream.synchronize();
  fmt::print(
      "\nhost stage times: the time to enqueue, not to run; only 'period' is the loop{}:\n{}",
      graph ? ". With graph replay the inner stages run on the host only in the warm-up and "
              "capture steps (see 'steps'); a replayed step is one launch, inside 'step'"
            : "",
      stage_table(prof));
  if (dev) {
    dev->synchronize();
    fmt::print("\ndevice stage times ({} steps joined, {} untimed):\n{}", dev->joined(),
               dev->dropped(), cuda::device_stage_table(prof, *dev));
  }
  if (graph) {
    const auto& c = cache.counters();
    const auto cold = cache.cold_start(key);
    fmt::print(
        "\ngraph cache: {} warm-up runs, {} capture, {} instantiation, {} replays; cold start: "
        "capture {:.1f} us + instantiate {:.1f} us\n",
        c.warmup_runs, c.captures, c.instantiations, c.replays, cold ? cold->capture_s * 1e6 : 0.0,
        cold ? cold->instantiate_s * 1e6 : 0.0);
  }
  const double fps = prof.fps().total_fps();
  fmt::print("FPS tracker: {} env-steps/s\n\n",
             std::isnan(fps) ? std::string("no sample yet") : format_thousands(fps));
}

}  // namespace

int run_cuda(const Args& args) {
  std::string why;
  if (!cuda::device_available(&why)) throw std::runtime_error("--backend cuda: " + why);
  const engine::Params params;
  cuda::Stream stream;
  const int warmup = args.warmup ? args.warmup : 10;
  if (args.sweep) {
    const std::vector<int> sizes =
        args.n_envs.empty() ? std::vector<int>{1024, 4096, 30000, 262144} : args.n_envs;
    const int steps = args.steps ? args.steps : 300;
    fmt::print(
        "speed_benchmark sweep: eager launches vs graph replay, {} steps each, {} kernels per "
        "step\n\n{:>9} {:>14} {:>14} {:>18} {:>18} {:>8}\n",
        steps, 3 * params.substeps + 4, "n_envs", "eager us/step", "graph us/step",
        "eager env-steps/s", "graph env-steps/s", "speedup");
    for (const int n : sizes) {
      const RunResult e = timed_run(params, n, false, warmup, steps, stream);
      const RunResult g = timed_run(params, n, true, warmup, steps, stream);
      fmt::print("{:>9} {:>14.1f} {:>14.1f} {:>18} {:>18} {:>7.2f}x\n", n, e.us_per_step,
                 g.us_per_step, format_thousands(e.fps, 0), format_thousands(g.fps, 0),
                 e.us_per_step / g.us_per_step);
      std::fflush(stdout);
    }
    fmt::print("\n");
    profiled_run(params, sizes.front(), true, warmup, 1000, true, stream, args);
    if (sizes.size() > 1) profiled_run(params, sizes.back(), true, warmup, 300, true, stream, args);
    return 0;
  }
  const int steps = args.steps ? args.steps : 1000;
  for (const int n : args.n_envs.empty() ? std::vector<int>{30000} : args.n_envs)
    profiled_run(params, n, !args.eager, warmup, steps, args.quiet, stream, args);
  return 0;
}

}  // namespace simprof::examples
