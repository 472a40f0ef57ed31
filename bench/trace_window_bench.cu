// SPDX-License-Identifier: MIT
// What a trace window through a GraphKernelTimer's stamps costs a replayed step (issue 41, case 5):
// a graph of 200 short kernels, paced (2 steps in flight), 1,024 and 30,000 envs. Each run replays
// 200 steps untraced, then a 200-step window whose every step runs the stamped copy, then 200
// steps untraced again; the host's steady clock times every step (paced, the loop runs at the GPU's
// rate), the window's end (its spans made, checked and written) included. The window's extra time
// per traced step is judged against what its stamps cost the GPU (nodes x the hop the timer
// measured) plus 10 % of the untraced step, the window handed over beside the loop (background);
// the same with the window's end on the loop's thread is printed for the record. --verdicts FILE
// writes the verdicts; --check exits 1 when one was not measured.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/kernel_timer.hpp"
#include "simprof/cuda/timing/step_pacer.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/trace/session.hpp"
#include "verdicts.hpp"

namespace {

using namespace simprof;
constexpr int kKernels = 200, kSteps = 200;

__global__ void elementwise(float* x, int n, float a) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 1.0001f + a;
}

constexpr double kNone = bench::kNotMeasured;
struct Result {
  double step_us = kNone, traced_us = kNone, window_end_ms = kNone, extra_us = kNone;
  double hop_ns = kNone, budget_us = kNone;
};

double mean(const std::vector<double>& v, std::size_t from, std::size_t to) {
  double s = 0;
  for (std::size_t i = from; i < to; ++i) s += v[i];
  return s / static_cast<double>(to - from);
}

Result measure(int n_envs, bool background) {
  cuda::Stream stream;
  ProfilingOptions po;
  po.show_fps = false;
  StepProfiler prof(po, n_envs);
  const int n = n_envs * 64;
  cuda::DeviceBuffer<float> x(static_cast<std::size_t>(n));
  cuda::StepPacer pacer(prof, stream);
  TraceOptions to;
  to.schedule = Schedule{kSteps, 0, kSteps, 1, 16};  // skip the warm-up, wait, then the window
  to.dir = (std::filesystem::temp_directory_path() / "simprof_trace_window_bench").string();
  to.background = background;
  TraceSession session(prof, to);
  cuda::GraphKernelTimer kernels(prof, stream);  // samples none of these steps by itself
  const SourceRegistration joined = session.add_source(&kernels);
  cuda::GraphCache cache(stream, {}, kernels.instrumentation());
  const StageId physics = prof.stage_id("physics");
  auto step = [&] {
    auto s = prof.step();
    cache.run({n_envs}, [&](cudaStream_t st) {
      auto p = prof.stage(physics);
      for (int k = 0; k < kKernels; ++k)
        elementwise<<<(n + 255) / 256, 256, 0, st>>>(x.data(), n, 1e-3f);
    });
  };
  for (int i = 0; i < 16; ++i) step();  // warm-up and capture (schedule's skip_first)
  std::vector<double> us;
  for (int i = 0; i < 3 * kSteps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  pacer.finish();
  session.wait();
  Result r;
  if (session.files().size() != 1 || kernels.replays() < kSteps) return r;  // not measured
  // Untraced: the steps before and after the window, each half's first 8 left out (the pacer's
  // queue fills again after the window's end).
  r.step_us = (mean(us, 8, kSteps) + mean(us, 2 * kSteps + 8, 3 * kSteps)) / 2;
  r.traced_us = mean(us, kSteps, 2 * kSteps - 1);
  r.window_end_ms = (us[2 * kSteps - 1] + us[2 * kSteps] - 2 * r.step_us) * 1e-3;
  double window = 0;
  for (int i = kSteps; i < 2 * kSteps + 8; ++i) window += us[i];
  r.extra_us = (window - (kSteps + 8) * r.step_us) / kSteps;
  r.hop_ns = kernels.hop_ns();
  r.budget_us = kKernels * r.hop_ns * 1e-3 + 0.10 * r.step_us;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Verdicts v;
  v.take_flags(argc, argv);
  std::string why;
  const bool gpu = cuda::device_available(&why);
  if (!gpu) std::printf("no GPU: nothing measured (%s)\n", why.c_str());
  std::printf("--- a %d-step trace window through the stamps of a %d-kernel graph, paced ---\n",
              kSteps, kKernels);
  std::printf("%8s %12s %10s %10s %14s %12s %9s %12s\n", "n_envs", "window end", "step us",
              "traced us", "window end ms", "extra us", "hop ns", "budget us");
  for (const int n_envs : {1024, 30000}) {
    // The window's end on the loop's thread (TraceOptions' default), for the record; then handed
    // over beside the loop (background, as GpuProfile's windows are), which is judged.
    const Result fg = gpu ? measure(n_envs, false) : Result{};
    const Result r = gpu ? measure(n_envs, true) : Result{};
    for (const Result* x : {&fg, &r})
      std::printf("%8d %12s %10.2f %10.2f %14.2f %12.2f %9.0f %12.2f\n", n_envs,
                  x == &fg ? "on the loop" : "beside it", x->step_us, x->traced_us,
                  x->window_end_ms, x->extra_us, x->hop_ns, x->budget_us);
    const double over = r.extra_us - r.budget_us;  // <= 0: within the budget
    std::printf(
        "a traced step's extra time over its stamps' budget, window handed over beside the loop, "
        "%d envs: %+.2f us [target <= 0: %s]\n",
        n_envs, over,
        v.judge(fmt::format("trace_window_{}", n_envs),
                fmt::format("extra loop time per traced step (the window's end included, handed "
                            "over beside the loop) less nodes x hop + 10 % of the step, {} envs",
                            n_envs),
                over, "us", bench::Verdicts::Goal::kAtMost, 0.0));
  }
  std::printf(
      "(step: untraced, host steady clock, paced at 2 in flight; extra: the window's steps and "
      "its end against as many untraced steps, per traced step; budget: %d nodes x hop + 10 %% of "
      "the step)\n",
      kKernels);
  return v.finish();
}
