// SPDX-License-Identifier: MIT
// speed_benchmark: a batched rigid-sphere engine, stepped as fast as it goes, with simprof's FPS
// line while it runs and the stage breakdown at the end.
//
//   speed_benchmark --backend cpu --n-envs 1024 --steps 300
//   speed_benchmark --backend cuda --sweep            (with the CUDA backend)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "args.hpp"
#include "cli.hpp"
#include "demo_engine/cpu_engine.hpp"
#include "run_record.hpp"
#include "simprof/memory/host_hook.hpp"
#include "simprof/simprof.hpp"

#if SIMPROF_EXAMPLES_CUDA
#include "cuda_main.hpp"
#endif

namespace simprof::examples {

std::string usage() {
  return "usage: speed_benchmark [--backend auto|cpu|cuda] [--n-envs N[,N...]] [--steps N]\n"
         "                       [--warmup N] [--quiet] [--eager] [--sweep] [--trace FILE]\n"
         "                       [--trace-mode kernel|graph] [--nvtx] [--sync] [--in-flight N]\n"
         "                       [--json FILE] [--memory]\n";
}

Schedule trace_schedule(int steps) {
  Schedule s;
  s.warmup = 2;
  s.active = 3;
  s.wait = std::max(0, steps / 2 - 5);
  s.repeat = 1;
  return s;
}

Args parse_args(int argc, char** argv) {
  Args a;
  cli::Flags(usage())
      .choice("--backend", a.backend, {"auto", "cpu", "cuda"})
      .custom("--n-envs",
              [&](const std::string& v) {  // given twice, the lists add up
                const std::vector<int> more = cli::parse_int_list("--n-envs", v, 1);
                a.n_envs.insert(a.n_envs.end(), more.begin(), more.end());
              })
      .integer("--steps", a.steps, 1)
      .integer("--warmup", a.warmup, 0)
      .flag("--quiet", a.quiet)
      .flag("--eager", a.eager)
      .flag("--sweep", a.sweep)
      .text("--trace", a.trace)
      .choice("--trace-mode", a.trace_mode, {"kernel", "graph"})
      .flag("--nvtx", a.nvtx)
      .flag("--sync", a.sync)
      .integer("--in-flight", a.in_flight, 0)
      .text("--json", a.json)
      .flag("--memory", a.memory)
      .parse(argc, argv);
  if (a.json.empty() && std::find(argv, argv + argc, std::string("--json")) != argv + argc)
    throw std::invalid_argument("--json: expected a file name");
  return a;
}

namespace {

int run_cpu(const Args& args, JsonReport* json) {
  if (args.nvtx || args.sync || args.trace_mode != "kernel" || args.in_flight >= 0)
    throw std::invalid_argument(
        "--nvtx, --sync, --trace-mode and --in-flight apply to --backend cuda");
  if (args.eager || args.sweep)
    throw std::invalid_argument(
        "--eager and --sweep compare kernel launches with graph replay: they need --backend cuda "
        "(on the CPU, sweep n_envs with --n-envs 256,1024,4096)");
  const engine::Params params;
  const int steps = args.steps ? args.steps : 200;
  const int warmup = args.warmup >= 0 ? args.warmup : 5;
  for (const int n_envs : args.n_envs.empty() ? std::vector<int>{1024} : args.n_envs) {
    ProfilingOptions options = ProfilingOptions::from_env();
    if (args.quiet) options.show_fps = false;
    options.stats_window = static_cast<std::size_t>(steps);
    StepProfiler prof(options, n_envs);
    engine::CpuEngine engine(params, n_envs);
    fmt::print(
        "speed_benchmark: backend cpu, {} envs x {} spheres, {} substeps, {}x{} depth image, "
        "{} steps (clock {})\n",
        n_envs, params.n_spheres, params.substeps, params.image_width, params.image_height, steps,
        to_string(prof.clock().source()));
    for (int i = 0; i < warmup; ++i) engine.step();  // first touches of the arrays stay out
    engine.attach(prof);
    // --memory: the host heap through the hook this binary installs (SIMPROF_COUNT_HOST_ALLOCATIONS
    // below); the CPU engine makes no CUDA calls.
    std::optional<MemoryTracker> memory;
    if (args.memory) memory.emplace(prof, nullptr, &host_allocations(), MemoryOptions{0});
    std::optional<TraceSession> trace;
    if (!args.trace.empty()) {
      trace.emplace(prof, TraceOptions{trace_schedule(steps)});
      trace->on_trace_ready([&](const Trace& t, std::uint64_t) {
        write_chrome_trace(t, args.trace);
        fmt::print("wrote {} ({} spans): open it in https://ui.perfetto.dev\n", args.trace,
                   t.spans.size());
      });
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) {
      auto step = prof.step();
      engine.step();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    prof.fps().flush();  // to the last step: a run shorter than a sample still gets its rate
    const auto st = prof.stats("step");
    fmt::print("\n{}", memory ? stage_table(prof, *memory) : stage_table(prof));
    HistogramOptions ho;
    ho.bins = 12;
    ho.width = 40;
    fmt::print("\nloop period (start to start) over {} steps:\n{}", steps,
               prof.histogram("period", ho));
    fmt::print(
        "\nmean step {:.1f} us: {} env-steps/s ({} steps/s per env, {} envs); FPS tracker: {}\n\n",
        st.mean * 1e6, format_thousands(n_envs / st.mean), format_thousands(1.0 / st.mean), n_envs,
        std::isnan(prof.fps().total_fps()) ? std::string("no sample yet")
                                           : format_thousands(prof.fps().total_fps()));
    std::optional<MemoryRecord> memory_rec;
    if (memory) memory_rec = memory_record(prof, *memory, 0);
    if (json) {
      RunRecord r;
      r.backend = "cpu";
      r.mode = "threads";
      r.n_envs = n_envs;
      r.warmup = warmup;
      r.steps = steps;
      r.seconds = seconds;
      r.throughput = static_cast<double>(n_envs) * steps / seconds;
      r.throughput_clock = "host steady clock";
      r.fps = prof.fps().total_fps();
      r.fps_line = fps_json(prof.fps());
      r.host = stage_rows(prof);
      r.memory = memory_rec;
      json->add(r);
    }
    if (memory_rec) fmt::print("{}\n", memory_line(*memory_rec));
  }
  return 0;
}

}  // namespace
}  // namespace simprof::examples

// --memory counts the host heap through simprof's opt-in hook: this binary installs it.
SIMPROF_COUNT_HOST_ALLOCATIONS();

int main(int argc, char** argv) {
  using namespace simprof::examples;
  Args args;
  try {
    args = parse_args(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "speed_benchmark: %s\n%s", e.what(), usage().c_str());
    return 2;
  }
  try {
    std::optional<JsonReport> json;
    if (!args.json.empty()) json.emplace(args.json, args, argc, argv);  // a bad path fails now
    JsonReport* report = json ? &*json : nullptr;
    int rc = 0;
#if SIMPROF_EXAMPLES_CUDA
    if (args.backend == "cuda" || (args.backend == "auto" && cuda_device_visible()))
      rc = run_cuda(args, report);
    else
      rc = run_cpu(args, report);
#else
    if (args.backend == "cuda") {
      std::fprintf(
          stderr,
          "speed_benchmark: --backend cuda: this build has no CUDA backend (configure with "
          "a CUDA compiler and SIMPROF_CUDA=ON/AUTO); run --backend cpu instead\n");
      return 2;
    }
    rc = run_cpu(args, report);
#endif
    if (json) {
      json->write();
      std::printf("wrote %s\n", args.json.c_str());
    }
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "speed_benchmark: %s\n", e.what());
    return 1;
  }
}
