// SPDX-License-Identifier: MIT
// timers: per-env clock-counter timers inside the engine's solver, summarised and plotted per env,
// like Genesis's examples/speed_benchmark/timers.py (which plots its solver's timer buffer).
//
//   timers --backend cpu --n-envs 256 --mode 2 --plot-every 100
//   timers --backend cuda --n-envs 30000 --mode 2 --svg timers.svg
//
// --mode 0: every env's control target at the box centre; 1: one random target per step shared by
// all envs; 2: a random target per env, so envs cluster differently and their contact work differs.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "cli.hpp"
#include "demo_engine/cpu_engine.hpp"
#include "simprof/simprof.hpp"
#include "timer_run.hpp"

#if SIMPROF_EXAMPLES_CUDA
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/trace/kernel_tracer.hpp"
#endif

namespace simprof::examples {
namespace {

struct Options {
  std::string backend = "auto";
  int n_envs = 0;
  int steps = 300;
  int mode = 2;
  int plot_every = 0;
  std::string row = "solve";
  std::string svg;
  bool profiling = false;
  std::string trace = "timers_trace.json";
};

Options parse(int argc, char** argv) {
  Options o;
  cli::Flags(
      "usage: timers [--backend auto|cpu|cuda] [--n-envs N] [--steps N] [--mode 0|1|2]\n"
      "              [--plot-every N] [--row solve|forces|contacts|integrate] [--svg FILE]\n"
      "              [--profiling [--trace FILE]]\n")
      .choice("--backend", o.backend, {"auto", "cpu", "cuda"})
      .integer("--n-envs", o.n_envs, 1, 1 << 24)
      .integer("--steps", o.steps, 1, 1 << 30)
      .integer("--mode", o.mode, 0, 2)
      .integer("--plot-every", o.plot_every, 0, 1 << 30)
      .text("--row", o.row)
      .text("--svg", o.svg)
      .flag("--profiling", o.profiling)
      .text("--trace", o.trace)
      .parse(argc, argv);
  return o;
}

class CpuRun final : public TimerRun {
 public:
  CpuRun(const engine::Params& p, int n, StepProfiler& prof)
      : engine_(p, n), timers_({"solve", "forces", "contacts", "integrate"}, n) {
    engine_.attach(prof);
  }
  void set_targets(const std::vector<float>& t) override { engine_.set_targets(t); }
  void step() override {
    const TimerView v = timers_.view();
    engine_.step_solver(&v);
    fresh_ = true;
  }
  std::optional<TimerFrame> latest() override {
    if (!fresh_) return std::nullopt;
    fresh_ = false;
    return timers_.read();
  }
  const char* unit() const override { return "TSC cycles / calibrated frequency"; }

 private:
  engine::CpuEngine engine_;
  TimerBuffer timers_;
  bool fresh_ = false;
};

int run(const Options& o) {
  bool cuda = o.backend == "cuda";
#if SIMPROF_EXAMPLES_CUDA
  if (o.backend == "auto") cuda = simprof::cuda::device_available();
#else
  if (cuda) throw std::invalid_argument("--backend cuda: this build has no CUDA backend");
#endif
  const int n = o.n_envs ? o.n_envs : (cuda ? 30000 : 256);
  engine::Params params;
  params.control_gain = 2.0f;
  ProfilingOptions popt;
  popt.show_fps = false;
  StepProfiler prof(popt, n);
  std::unique_ptr<TimerRun> backend;
#if SIMPROF_EXAMPLES_CUDA
  if (cuda) backend = make_cuda_run(params, n, prof);
#endif
  if (!backend) backend = std::make_unique<CpuRun>(params, n, prof);
  TimerLabels labels({"solve", "forces", "contacts", "integrate"});
  const int row = labels.row(o.row);
  TimerStats stats(labels, n);
  fmt::print("timers: backend {}, {} envs, mode {}, {} steps; readings in {}\n",
             cuda ? "cuda" : "cpu", n, o.mode, o.steps, backend->unit());
  // --profiling: like Genesis's timers.py --profiling, trace a few steps (CPU stages, and every
  // kernel on CUDA) next to the timers.
  std::optional<TraceSession> trace;
  if (o.profiling) {
    Schedule sched;
    sched.wait = std::max(0, o.steps / 2 - 3);
    sched.warmup = 2;
    sched.active = 1;
    trace.emplace(prof, TraceOptions{sched});
    trace->on_trace_ready([&](const Trace& t, std::uint64_t) {
      write_chrome_trace(t, o.trace);
      fmt::print("wrote {} ({} spans): open it in https://ui.perfetto.dev\n{}\n", o.trace,
                 t.spans.size(), analyze(t).report(8));
    });
  }
#if SIMPROF_EXAMPLES_CUDA
  std::optional<cuda::KernelTracer> kernels;
  SourceRegistration kernels_joined;  // after the tracer: leaves the session before it goes
  if (o.profiling && cuda) {
    kernels.emplace(prof);
    kernels_joined = trace->add_source(&*kernels);
  }
#endif

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> xy(-0.3f, 0.3f), z(0.05f, 0.9f);
  std::vector<float> targets(3 * static_cast<std::size_t>(n));
  for (int s = 0; s < o.steps; ++s) {
    if (o.mode == 0 || (o.mode == 1 && s == 0) || o.mode == 1) {
      const float tx = o.mode == 0 ? 0.0f : xy(rng), ty = o.mode == 0 ? 0.0f : xy(rng),
                  tz = o.mode == 0 ? 0.3f : z(rng);
      for (int e = 0; e < n; ++e) {
        targets[3 * static_cast<std::size_t>(e)] = tx;
        targets[3 * static_cast<std::size_t>(e) + 1] = ty;
        targets[3 * static_cast<std::size_t>(e) + 2] = tz;
      }
    } else {
      for (int e = 0; e < n; ++e) {
        targets[3 * static_cast<std::size_t>(e)] = xy(rng);
        targets[3 * static_cast<std::size_t>(e) + 1] = xy(rng);
        targets[3 * static_cast<std::size_t>(e) + 2] = z(rng);
      }
    }
    {
      auto step = prof.step();
      backend->set_targets(targets);
      backend->step();
    }
    if (auto f = backend->latest()) stats.update(*f);
    if (o.plot_every && (s + 1) % o.plot_every == 0 && stats.frames())
      std::fputs(terminal_plot(stats, row).c_str(), stdout);
  }
  backend->finish();
  if (auto f = backend->latest()) stats.update(*f);
  std::fputs(terminal_plot(stats, row).c_str(), stdout);
  fmt::print("\n{:<10} {:>10} {:>10} {:>10} {:>10} {:>10}   slowest envs (mean over {} frames)\n",
             "timer", "mean us", "p50 us", "p95 us", "p99 us", "max us", stats.frames());
  for (int r = 0; r < labels.rows(); ++r) {
    const auto a = stats.across_envs(r);
    fmt::print("{:<10} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f}   {}\n", labels.name(r),
               a.mean * 1e6, a.p50 * 1e6, a.p95 * 1e6, a.p99 * 1e6, a.max * 1e6,
               fmt::join(stats.slowest(r, 5), ", "));
  }
  if (!o.svg.empty()) {
    write_file_atomic(
        o.svg, timers_svg(stats, fmt::format("simprof timers: {} envs, mode {}", n, o.mode)));
    fmt::print("wrote {}\n", o.svg);
  }
  return 0;
}

}  // namespace
}  // namespace simprof::examples

int main(int argc, char** argv) {
  try {
    return simprof::examples::run(simprof::examples::parse(argc, argv));
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "timers: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "timers: %s\n", e.what());
    return 1;
  }
}
