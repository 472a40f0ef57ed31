// SPDX-License-Identifier: MIT
// The engine's iterative contact solver (ContactSolver: project contacts until no penetration is
// above the tolerance) run three ways, from the same initial state:
//   host-driven  eager kernels; after every pass the host copies the loop flag and synchronises
//   fixed        a graph with max_iterations passes unrolled (enough for the worst frame)
//   while node   a graph whose loop is a CUDA conditional while node: the GPU decides
// Prints per mode: the frame time (back to back, and per frame with a synchronisation: mean, p50,
// p99) and the passes per frame, and checks that all three computed the same passes and the same
// state. --timers adds each pass's time per env (the while node's per-env timers, one row per
// pass); --trace FILE writes a Perfetto trace of a few while-node frames and counts their passes.
//
//   solver_loop --n-envs 1024,30000 --frames 300 --max-iterations 32
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.hpp"
#include "demo_engine/contact_solver.hpp"
#include "demo_engine/cuda_engine.hpp"
#include "gpu.hpp"
#include "simprof/base/stats.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/graphs/while_loop.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/device_timer_buffer.hpp"
#include "simprof/cuda/timing/stopwatch.hpp"
#include "simprof/cuda/trace/kernel_tracer.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/timers/timer_stats.hpp"  // TimerFrame
#include "simprof/trace/chrome_json.hpp"
#include "simprof/trace/session.hpp"

namespace {

using namespace simprof;

struct Args {
  std::vector<int> n_envs = {1024, 30000};
  int frames = 300;
  int max_iterations = 32;
  double tolerance = 1e-5;
  int spheres = 8;
  bool timers = false;
  std::string trace;  // write a Perfetto trace of a few while-node frames here
};

constexpr const char* kUsage =
    "solver_loop [--n-envs N[,N...]] [--frames F] [--max-iterations K] [--tolerance M]\n"
    "            [--spheres S] [--timers] [--trace FILE]\n";

Args parse(int argc, char** argv) {
  Args a;
  cli::Flags(kUsage)
      .ints("--n-envs", a.n_envs, 1)
      .integer("--frames", a.frames, 1)
      .integer("--max-iterations", a.max_iterations, 1, 4096)
      .real("--tolerance", a.tolerance, 1e-9, 1.0)
      .integer("--spheres", a.spheres, 1, 27)
      .flag("--timers", a.timers)
      .text("--trace", a.trace)
      .parse(argc, argv);
  return a;
}

struct Result {
  double us_back_to_back = 0;
  LatencyStats latency;  // per frame, synchronised
  std::vector<int> passes;
  std::vector<float> state;
};

Result run(const engine::Params& params, int n_envs, engine::LoopMode mode, const Args& a,
           cuda::DeviceTimerBuffer* timers) {
  cuda::Stream stream;
  engine::CudaEngine eng(params, n_envs, stream);
  engine::ContactSolver solver(eng, a.max_iterations, static_cast<float>(a.tolerance));
  engine::SolverRunner runner(solver, mode, n_envs);
  auto frame = [&] { runner.frame(stream, timers); };
  // Half the frames one by one, each waited for (latency as a host that waits sees it: the host
  // clock, the stream drained before and after), half back to back (throughput: CUDA events).
  std::vector<double> per_frame;
  per_frame.reserve(static_cast<std::size_t>(a.frames));
  for (int i = 0; i < 5; ++i) frame();  // warm-up and capture
  cuda::Stopwatch waited(stream, cuda::StopwatchClock::kHostDrained);
  for (int i = 0; i < a.frames; ++i) per_frame.push_back(waited.time(frame));
  cuda::Stopwatch watch(stream);
  Result r;
  r.us_back_to_back = watch.time([&] {
    for (int i = 0; i < a.frames; ++i) frame();
  }) * 1e6 / a.frames;
  r.latency = summarize(per_frame);
  r.passes = solver.pass_history(stream);
  r.state = eng.snapshot(stream);
  return r;
}

// A few while-node frames traced (CUPTI kernels next to the host stages), written as a Perfetto
// trace; says whether the tracer saw every pass that ran on the device.
void trace_frames(const engine::Params& params, int n_envs, const Args& a) {
  cuda::Stream stream;
  engine::CudaEngine eng(params, n_envs, stream);
  engine::ContactSolver solver(eng, a.max_iterations, static_cast<float>(a.tolerance));
  engine::SolverRunner runner(solver, engine::LoopMode::kWhileNode, n_envs);
  ProfilingOptions o;
  o.show_fps = false;
  StepProfiler prof(o, n_envs);
  // Frames 151-153: replays, and far enough in that the spheres touch (the first frames fall
  // freely: one pass each).
  constexpr int kWait = 150, kFrames = 3;
  TraceSession session(prof, TraceOptions{Schedule{kWait, 1, kFrames, 1, 0}});
  cuda::KernelTracer tracer(prof);
  auto tracer_joined = session.add_source(&tracer);  // leaves before the tracer goes
  std::size_t projected = 0;
  session.on_trace_ready([&](const Trace& t, std::uint64_t) {
    write_chrome_trace(t, a.trace);
    for (const Span& s : t.spans)
      projected +=
          s.kind == SpanKind::kKernel && s.name.find("project_kernel") != std::string::npos;
  });
  for (int f = 0; f < kWait + 1 + kFrames; ++f) {
    auto step = prof.step();
    auto st = prof.stage("physics/solver");
    runner.frame(stream);
    stream.synchronize();  // so each frame's kernels fall inside its step
  }
  const std::vector<int> passes = solver.pass_history(stream);
  int traced = 0;
  for (std::size_t i = passes.size() - kFrames; i < passes.size(); ++i)
    traced += std::abs(passes[i]);
  fmt::print(
      "\nwrote {}: {} while-node frames, {} passes ran on the device, {} project_kernel "
      "events traced{}\n",
      a.trace, kFrames, traced, projected,
      tracer.enabled()
          ? (projected == static_cast<std::size_t>(traced) ? " (every pass)" : " (MISSING passes)")
          : fmt::format(" (tracer off: {})", tracer.disabled_reason()));
}

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  if (!simprof::examples::gpu_or_say_why("solver_loop")) return 0;
  if (!cuda::conditional_nodes_supported()) {
    fmt::print("solver_loop needs conditional graph nodes (CUDA >= 12.4 runtime and driver)\n");
    return 0;
  }
  engine::Params params;
  params.n_spheres = a.spheres;
  fmt::print(
      "contact solver: {} spheres per env, tolerance {:g} m, at most {} passes; {} frames per "
      "timing; us/frame back to back ({}), sync: each frame waited for ({})\n",
      a.spheres, a.tolerance, a.max_iterations, a.frames,
      cuda::to_string(cuda::StopwatchClock::kDevice),
      cuda::to_string(cuda::StopwatchClock::kHostDrained));
  fmt::print("{:>7} {:>12} | {:>10} | {:>9} {:>9} {:>9} | {:>6} {:>5} | {}\n", "n_envs", "loop",
             "us/frame", "sync mean", "p50", "p99", "passes", "max", "same as host");
  for (int n : a.n_envs) {
    std::vector<Result> results;
    for (engine::LoopMode m :
         {engine::LoopMode::kHostDriven, engine::LoopMode::kFixed, engine::LoopMode::kWhileNode}) {
      results.push_back(run(params, n, m, a, nullptr));
      const Result& r = results.back();
      const double mean_passes =
          r.passes.empty()
              ? 0.0
              : std::accumulate(r.passes.begin(), r.passes.end(), 0.0, [](double s, int p) {
                  return s + std::abs(p);
                }) / static_cast<double>(r.passes.size());
      int max_passes = 0;
      for (int p : r.passes) max_passes = std::max(max_passes, std::abs(p));
      const bool same = r.passes == results.front().passes && r.state == results.front().state;
      fmt::print("{:>7} {:>12} | {:>10.1f} | {:>9.1f} {:>9.1f} {:>9.1f} | {:>6.2f} {:>5} | {}\n", n,
                 engine::to_string(m), r.us_back_to_back, r.latency.mean * 1e6, r.latency.p50 * 1e6,
                 r.latency.p99 * 1e6, mean_passes, max_passes,
                 m == engine::LoopMode::kHostDriven ? "-" : (same ? "yes" : "NO"));
      if (!same) return 1;
    }
    const int unconverged = static_cast<int>(std::count_if(
        results.front().passes.begin(), results.front().passes.end(), [](int p) { return p < 0; }));
    if (unconverged)
      fmt::print("{:>7} {} of {} frames hit max_iterations before converging\n", n, unconverged,
                 results.front().passes.size());
    fmt::print("{:>7} while node vs host-driven {:.2f}x, vs fixed {:.2f}x (back to back)\n", n,
               results[0].us_back_to_back / results[2].us_back_to_back,
               results[1].us_back_to_back / results[2].us_back_to_back);
  }
  if (!a.trace.empty()) trace_frames(params, a.n_envs.front(), a);
  if (a.timers) {
    const int n = a.n_envs.front();
    std::vector<std::string> labels;
    for (int i = 0; i < a.max_iterations; ++i) labels.push_back(fmt::format("pass {}", i));
    cuda::DeviceTimerBuffer timers(labels, n);
    cuda::Stream stream;
    const Result r = run(params, n, engine::LoopMode::kWhileNode, a, &timers);
    const TimerFrame f = timers.read(stream);
    const int last = std::abs(r.passes.back());
    fmt::print("\nper-env timers of the last while-node frame ({} passes), n_envs {}:\n", last, n);
    fmt::print("{:>8} | {:>10} | {:>9} {:>9} {:>9}\n", "pass", "envs timed", "p50 us", "p99 us",
               "max us");
    for (int row = 0; row < a.max_iterations; ++row) {
      std::vector<double> timed;  // envs still active in this pass (converged envs skip it)
      for (int e = 0; e < n; ++e)
        if (f.ticks(row, e) != 0) timed.push_back(f.seconds(row, e));
      if (timed.empty()) break;
      const LatencyStats s = summarize(timed);
      fmt::print("{:>8} | {:>10} | {:>9.2f} {:>9.2f} {:>9.2f}\n", row, s.count, s.p50 * 1e6,
                 s.p99 * 1e6, s.max * 1e6);
    }
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "solver_loop: %s\n", e.what());
  return 2;
}
