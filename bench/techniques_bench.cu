// SPDX-License-Identifier: MIT
// The CUDA-graph techniques of docs/techniques.md, each against its baseline in the same binary:
//   * BM_SolverLoop/mode/n_envs/max_iterations  the contact solver's convergence loop host-driven
//     (0), as max_iterations unrolled passes in a graph (1), as a conditional while node (2).
//     Fixed iteration counts, so every mode solves the same frames. Time per frame, CUDA events.
//   * BM_DualGraph/order/n_envs/image  physics + render graphs serialised on one stream (0),
//     overlapped on two streams (1), overlapped with the physics stream prioritised (2). Time per
//     frame, CUDA events from a batch's first physics start to its last image's end.
//   * BM_LoopOverhead/mode/iterations  the cost of the loop itself: a body of two one-thread
//     kernels run `iterations` times host-driven (0), unrolled in a graph (1), as a while node (2).
//   * BM_Validate/on_device/n_envs  one FP16-vs-FP32 state validation through the host (0) or
//     reduced on the GPU (1). CUDA events, from the end of the work queued before it to the
//     verdict on the host.
// Every figure is timed with cuda::Stopwatch (CUDA events). Ratios at the end.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <numeric>
#include <string>
#include <tuple>

#include "demo_engine/contact_solver.hpp"
#include "demo_engine/cuda_engine.hpp"
#include "demo_engine/mixed_engine.hpp"
#include "demo_engine/render_pipeline.hpp"
#include "ratio_reporter.hpp"
#include "simprof/cuda/graphs/while_loop.hpp"
#include "simprof/cuda/precision/device_comparer.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/stopwatch.hpp"

namespace {

using namespace simprof;

std::map<std::tuple<int, int, int>, double> g_solver, g_dual;  // (mode, n, x) -> us per frame
std::map<std::tuple<int, int, int>, double> g_passes;
std::map<std::pair<int, int>, double> g_validate;  // (on_device, n) -> us

bool have_gpu(benchmark::State& state, bool while_nodes = false) {
  std::string why;
  if (!cuda::device_available(&why)) {
    state.SkipWithError(("no GPU: " + why).c_str());
    return false;
  }
  if (while_nodes && !cuda::conditional_nodes_supported()) {
    state.SkipWithError("conditional nodes need CUDA >= 12.4");
    return false;
  }
  return true;
}

constexpr int kFramesPerIteration = 10;

// The benchmark loop: `measure` returns one iteration's time in seconds (the manual time). Returns
// the mean over the iterations, in microseconds.
template <class F>
double timed_us(benchmark::State& state, F&& measure) {
  double total = 0;
  for (auto _ : state) {
    const double s = measure();
    state.SetIterationTime(s);
    total += s;
  }
  return total / static_cast<double>(state.iterations()) * 1e6;
}

// kFramesPerIteration calls of `one` on `stream`, per call (CUDA events).
template <class F>
double event_timed_us(benchmark::State& state, cudaStream_t stream, F&& one) {
  cuda::Stopwatch watch(stream);
  return timed_us(state, [&] {
    return watch.time([&] {
      for (int i = 0; i < kFramesPerIteration; ++i) one();
    }) / kFramesPerIteration;
  });
}

void BM_SolverLoop(benchmark::State& state) {
  if (!have_gpu(state, /*while_nodes=*/true)) return;
  const auto mode = static_cast<engine::LoopMode>(state.range(0));
  const int n = static_cast<int>(state.range(1)), max_it = static_cast<int>(state.range(2));
  cuda::Stream stream;
  engine::CudaEngine eng(engine::Params{}, n, stream);
  engine::ContactSolver solver(eng, max_it, 1e-5f);
  engine::SolverRunner runner(solver, mode, n);
  for (int i = 0; i < 5; ++i) runner.frame(stream);  // warm-up and capture
  const double us = event_timed_us(state, stream, [&] { runner.frame(stream); });
  const std::vector<int> passes = solver.pass_history(stream);
  double sum = 0;
  for (int p : passes) sum += p < 0 ? -p : p;
  const auto key = std::make_tuple(static_cast<int>(mode), n, max_it);
  g_solver[key] = us;
  g_passes[key] = sum / static_cast<double>(passes.size());
  state.counters["passes"] = g_passes[key];
  state.SetLabel(engine::to_string(mode));
}
BENCHMARK(BM_SolverLoop)
    ->ArgsProduct({{0, 1, 2}, {1024, 30000}, {32, 128}})
    ->Iterations(20)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// A loop whose body does (almost) nothing: what remains is the loop's own cost per iteration.
__global__ void tick_kernel(int* x) { ++x[1]; }
__global__ void count_kernel(int* x, int n, cuda::LoopCondition c) {
  const int it = ++x[0];
  cuda::set_condition(c, it < n);
}
__global__ void reset_kernel(int* x) { x[0] = x[1] = 0; }

std::map<std::pair<int, int>, double> g_loop;  // (mode, iterations) -> us per iteration

void BM_LoopOverhead(benchmark::State& state) {
  if (!have_gpu(state, /*while_nodes=*/true)) return;
  const int mode = static_cast<int>(state.range(0)), n = static_cast<int>(state.range(1));
  cuda::Stream stream;
  cuda::DeviceBuffer<int> x(2), flag(1);
  cuda::WhileLoop loop;
  cuda::GraphCache cache(stream);
  const cuda::LoopCondition ignored{0, reinterpret_cast<unsigned*>(flag.data()), 0};
  auto body = [&](cudaStream_t s, const cuda::LoopCondition& c) {
    tick_kernel<<<1, 1, 0, s>>>(x.data());
    count_kernel<<<1, 1, 0, s>>>(x.data(), n, c);
  };
  auto one = [&] {
    if (mode == 0) {
      reset_kernel<<<1, 1, 0, stream>>>(x.data());
      loop.enqueue(stream, body);
      return;
    }
    cache.run({n}, [&](cudaStream_t s) {
      reset_kernel<<<1, 1, 0, s>>>(x.data());
      if (mode == 1)
        for (int i = 0; i < n; ++i) body(s, ignored);
      else
        loop.enqueue(s, body);
    });
  };
  for (int i = 0; i < 5; ++i) one();
  g_loop[{mode, n}] = event_timed_us(state, stream, one);
  state.SetLabel(engine::to_string(static_cast<engine::LoopMode>(mode)));
}
BENCHMARK(BM_LoopOverhead)
    ->ArgsProduct({{0, 1, 2}, {1, 8, 64}})
    ->Iterations(50)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

constexpr int kPipelineFrames = 25;

void BM_DualGraph(benchmark::State& state) {
  if (!have_gpu(state)) return;
  const int order = static_cast<int>(state.range(0)), n = static_cast<int>(state.range(1));
  engine::Params p;
  p.image_width = p.image_height = static_cast<int>(state.range(2));
  cuda::Stream init;
  engine::CudaEngine eng(p, n, init);
  cuda::FramePipelineOptions o;
  o.overlap = order != 0;
  o.prioritize_producer = order == 2;
  engine::RenderPipeline pipe(eng, o);
  for (int i = 0; i < 20; ++i) pipe.submit();
  pipe.drain();
  pipe.frames().clear_latencies();
  cuda::Stopwatch watch(pipe.frames().producer_stream());
  const double us = timed_us(state, [&] {
    watch.start();
    for (int i = 0; i < kPipelineFrames; ++i) pipe.submit();
    watch.stop(pipe.frames().consumer_stream());
    pipe.drain();
    return watch.last_s() / kPipelineFrames;
  });
  const LatencyStats lat = summarize(pipe.frames().latencies());
  state.counters["latency_mean_us"] = lat.mean * 1e6;
  state.counters["latency_p95_us"] = lat.p95 * 1e6;
  g_dual[{order, n, static_cast<int>(state.range(2))}] = us;
  state.SetLabel(order == 0 ? "serialised" : order == 1 ? "overlapped" : "overlap+priority");
}
BENCHMARK(BM_DualGraph)
    ->ArgsProduct({{0, 1, 2}, {4096, 30000}, {8, 32}})
    ->Iterations(20)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void BM_Validate(benchmark::State& state) {
  if (!have_gpu(state)) return;
  const bool on_device = state.range(0) != 0;
  const int n = static_cast<int>(state.range(1));
  cuda::Stream stream;
  engine::CudaEngine ref(engine::Params{}, n, stream);
  engine::MixedEngine var(engine::Params{}, n, engine::Storage::kFp16, stream);
  for (int i = 0; i < 10; ++i) {
    ref.enqueue_solver(stream, nullptr);
    var.enqueue_step(stream);
  }
  cuda::DeviceComparer cmp;
  PrecisionChecker check;
  cuda::Stopwatch watch(stream);  // the warm-up steps above are still queued: never counted
  g_validate[{on_device ? 1 : 0, n}] = timed_us(state, [&] {
    return watch.time([&] {
      const engine::StateSums s = engine::state_sums(ref, var, stream, on_device ? &cmp : nullptr);
      check.clear();
      check.record("positions", QuantityClass::kState, s.positions);
      check.record("velocities", QuantityClass::kState, s.velocities);
    });
  });
}
BENCHMARK(BM_Validate)
    ->ArgsProduct({{0, 1}, {4096, 30000}})
    ->Iterations(20)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void print_ratios() {
  std::printf("\n--- contact solver loop, us per frame (CUDA events) ---\n");
  std::printf("%7s %5s %7s | %11s %9s %11s | %13s %13s\n", "n_envs", "max", "passes", "host-driven",
              "fixed", "while node", "while/host", "while/fixed");
  for (int n : {1024, 30000})
    for (int m : {32, 128}) {
      const auto h = g_solver.find({0, n, m}), f = g_solver.find({1, n, m}),
                 w = g_solver.find({2, n, m});
      if (h == g_solver.end() || f == g_solver.end() || w == g_solver.end()) continue;
      std::printf("%7d %5d %7.2f | %11.1f %9.1f %11.1f | %12.2fx %12.2fx\n", n, m,
                  g_passes[{2, n, m}], h->second, f->second, w->second, h->second / w->second,
                  f->second / w->second);
    }
  std::printf("(x > 1: the while node is faster)\n");
  std::printf(
      "\n--- loop overhead: a body of two one-thread kernels, us per loop (CUDA events) ---\n");
  std::printf("%10s | %11s %9s %11s | %22s\n", "iterations", "host-driven", "unrolled",
              "while node", "per extra iteration");
  for (int n : {1, 8, 64}) {
    const auto h = g_loop.find({0, n}), u = g_loop.find({1, n}), w = g_loop.find({2, n});
    if (h == g_loop.end() || u == g_loop.end() || w == g_loop.end()) continue;
    std::printf("%10d | %11.1f %9.1f %11.1f |", n, h->second, u->second, w->second);
    const auto h1 = g_loop.find({0, 1}), u1 = g_loop.find({1, 1}), w1 = g_loop.find({2, 1});
    if (n > 1 && h1 != g_loop.end() && u1 != g_loop.end() && w1 != g_loop.end())
      std::printf(" host %.2f, unrolled %.2f, while %.2f", (h->second - h1->second) / (n - 1),
                  (u->second - u1->second) / (n - 1), (w->second - w1->second) / (n - 1));
    std::printf("\n");
  }
  std::printf("\n--- physics + render, us per frame (CUDA events, pipelined) ---\n");
  std::printf("%7s %6s | %11s %11s %11s | %11s %11s\n", "n_envs", "image", "serialised",
              "overlapped", "overlap+pri", "overlap", "+priority");
  for (int n : {4096, 30000})
    for (int img : {8, 32}) {
      const auto s = g_dual.find({0, n, img}), o = g_dual.find({1, n, img}),
                 p = g_dual.find({2, n, img});
      if (s == g_dual.end() || o == g_dual.end() || p == g_dual.end()) continue;
      std::printf("%7d %6d | %11.1f %11.1f %11.1f | %10.2fx %10.2fx\n", n, img, s->second,
                  o->second, p->second, s->second / o->second, s->second / p->second);
    }
  std::printf("(throughput vs serialised)\n");
  std::printf(
      "\n--- one FP16 state validation, us (CUDA events, to the verdict on the host) ---\n");
  for (int n : {4096, 30000}) {
    const auto h = g_validate.find({0, n}), d = g_validate.find({1, n});
    if (h == g_validate.end() || d == g_validate.end()) continue;
    std::printf("%7d envs: through the host %.0f us, on the GPU %.0f us (%.1fx)\n", n, h->second,
                d->second, h->second / d->second);
  }
}

}  // namespace

int main(int argc, char** argv) {
  return simprof::bench::run_benchmarks(
      argc, argv, [](const simprof::bench::RatioReporter&) { print_ratios(); });
}
