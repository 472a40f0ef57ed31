// SPDX-License-Identifier: MIT
#include "cuda_main.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "demo_engine/cuda_engine.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/memory/device_allocations.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/device_clock.cuh"
#include "simprof/cuda/timing/device_timer_buffer.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"
#include "simprof/cuda/timing/step_pacer.hpp"
#include "simprof/cuda/timing/stopwatch.hpp"
#include "simprof/cuda/trace/kernel_tracer.hpp"
#include "simprof/cuda/trace/nvtx.hpp"
#include "simprof/simprof.hpp"

namespace simprof::examples {

bool cuda_device_visible() { return cuda::device_available(); }

namespace {

struct RunResult {
  double us_per_step = 0;  // GPU time of the timed steps (CUDA events), per step
  double fps = 0;          // env-steps per second
};

// Runs `steps` steps after `warmup` (graph mode: the cache's own warm-up and capture happen inside
// the warm-up), timed on the GPU's clock.
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
  cuda::Stopwatch watch(stream);
  const double s = watch.time([&] {
    for (int i = 0; i < steps; ++i) one();
  });
  return {s / steps * 1e6, static_cast<double>(n_envs) * steps / s};
}

// The SM clock now, in MHz: clock64 cycles over global-timer nanoseconds on one thread spinning for
// about 2 ms (the clock idles far below its nominal rate and boosts under load: this is what the
// run starts at, after the warm-up kernels that precede it).
__global__ void sm_clock_kernel(unsigned long long* out) {
  const unsigned long long t0 = cuda::global_timer_ns();
  const long long c0 = clock64();
  unsigned long long t = t0;
  while (t - t0 < 2'000'000ull) t = cuda::global_timer_ns();
  const long long c1 = clock64();
  out[0] = static_cast<unsigned long long>(c1 - c0);
  out[1] = t - t0;
}

GpuInfo gpu_info(const cuda::Stream& stream) {
  GpuInfo g;
  int device = 0;
  SIMPROF_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp p{};
  SIMPROF_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  g.name = p.name;
  g.compute_capability = p.major * 10 + p.minor;
  SIMPROF_CUDA_CHECK(cudaDriverGetVersion(&g.driver_version));
  SIMPROF_CUDA_CHECK(cudaRuntimeGetVersion(&g.runtime_version));
  g.sm_clock_nominal_mhz = cuda::clock_freq_hz(device) * 1e-6;
  cuda::DeviceBuffer<unsigned long long> out(2);
  sm_clock_kernel<<<1, 1, 0, stream.get()>>>(out.data());
  SIMPROF_CUDA_CHECK_LAUNCH("sm_clock_kernel");
  unsigned long long h[2] = {0, 0};
  out.copy_to_host(h, 2, stream.get());
  stream.synchronize();
  g.sm_clock_mhz = h[1] ? static_cast<double>(h[0]) / static_cast<double>(h[1]) * 1e3 : 0.0;
  return g;
}

std::string or_none(double fps) {
  return std::isnan(fps) ? std::string("no sample") : format_thousands(fps);
}

// A run with the FPS line, host stage statistics and device stage times. The loop is paced
// (args.in_flight steps on the GPU at most) unless --in-flight 0; the FPS line then reads the GPU's
// step-end times. After the warm-up the statistics and the FPS line start afresh, and the timed
// steps are bracketed by CUDA events: the throughput the GPU delivered, to hold the FPS line to.
void profiled_run(const engine::Params& params, int n_envs, bool graph, int warmup, int steps,
                  bool quiet, const cuda::Stream& stream, const Args& args, JsonReport* json) {
  // --memory: every CUDA allocation from here on (the engine's buffers are the run's "in use").
  std::optional<cuda::DeviceAllocations> allocations;
  if (args.memory) allocations.emplace();
  engine::CudaEngine eng(params, n_envs, stream);
  ProfilingOptions o = ProfilingOptions::from_env();
  if (quiet) o.show_fps = false;
  o.stats_window = static_cast<std::size_t>(std::max(warmup, steps));
  StepProfiler prof(o, n_envs);
  eng.attach(prof);
  const int in_flight = args.in_flight < 0 ? 2 : args.in_flight;
  // Device stage timestamps would show up in a kernel trace as kernels of their own: off when
  // tracing (the pacer alone then bounds the loop).
  std::optional<cuda::DeviceStageTimer> dev;
  std::optional<cuda::StepPacer> pacer_only;
  if (args.trace.empty()) {
    cuda::DeviceStageTimerOptions d;
    d.max_in_flight = in_flight;
    dev.emplace(prof, stream, d);
  } else if (in_flight > 0) {
    cuda::StepPacerOptions p;
    p.max_in_flight = in_flight;
    pacer_only.emplace(prof, stream, p);
  }
  const cuda::StepPacer* pacer = dev ? dev->pacer() : pacer_only ? &*pacer_only : nullptr;
  auto drain = [&] {  // everything the GPU did so far is taken in
    if (dev) dev->synchronize();
    if (pacer_only) pacer_only->finish();
    stream.synchronize();
  };
  std::optional<cuda::NvtxRanges> nvtx;
  if (args.nvtx) nvtx.emplace(prof);
  std::optional<TraceSession> trace;
  std::optional<cuda::KernelTracer> tracer;
  SourceRegistration tracer_joined;  // after the tracer: leaves the session before it goes
  if (!args.trace.empty()) {
    trace.emplace(prof, TraceOptions{trace_schedule(warmup + steps)});
    cuda::KernelTracerOptions ko;
    ko.mode =
        args.trace_mode == "graph" ? cuda::TraceMode::kGraphLaunch : cuda::TraceMode::kPerKernel;
    tracer.emplace(prof, ko);
    tracer_joined = trace->add_source(&*tracer);
    trace->on_trace_ready([&](const Trace& t, std::uint64_t) {
      write_chrome_trace(t, args.trace);
      fmt::print("\nwrote {} ({} spans, {} dropped): open it in https://ui.perfetto.dev\n{}\n",
                 args.trace, t.spans.size(), t.dropped, analyze(t).report(10));
    });
  }
  cuda::GraphCache cache(stream, {}, dev ? dev->instrumentation() : nullptr);
  const cuda::GraphKey key{n_envs};
  fmt::print(
      "speed_benchmark: backend cuda ({}), {} envs x {} spheres, {} kernels per step, {} steps, "
      "{}\n",
      graph ? "graph replay" : "eager launches", n_envs, params.n_spheres, eng.kernels_per_step(),
      steps,
      in_flight > 0 ? fmt::format("at most {} steps in flight, FPS on the GPU clock", in_flight)
                    : std::string("steps in flight unbounded, FPS on the host clock"));
  auto one = [&] {
    if (args.sync) stream.synchronize();  // lines the timelines up call for call; halves throughput
    auto step = prof.step();
    if (graph)
      cache.run(key, [&](cudaStream_t s) { eng.enqueue_step(s); });
    else
      eng.enqueue_step(stream);
  };
  for (int i = 0; i < warmup; ++i) one();
  drain();
  RunRecord rec;
  rec.backend = "cuda";
  rec.mode = graph ? "graph" : "eager";
  rec.n_envs = n_envs;
  rec.warmup = warmup;
  rec.steps = steps;
  if (graph && warmup > 0) {
    rec.host_warmup = stage_rows(prof);
    fmt::print(
        "\nhost stage times of the {} warm-up steps (graph warm-up runs and the capture): the "
        "engine's stages run on the host only here; a replayed step is one launch\n{}",
        warmup, stage_table(prof));
  }
  prof.reset_stats();  // the timed steps only, from here
  prof.fps().reset();
  // The timed steps' allocations, device and host: after the warm-up and capture, every one counts.
  std::optional<MemoryTracker> memory;
  if (args.memory) memory.emplace(prof, &*allocations, &host_allocations(), MemoryOptions{0});
  cuda::Stopwatch watch(stream);
  watch.start();
  for (int i = 0; i < steps; ++i) one();
  watch.stop();
  drain();
  if (!pacer) prof.fps().flush();  // host clock: the sample in progress, to the last step
  rec.seconds = watch.last_s();
  rec.throughput = static_cast<double>(n_envs) * steps / rec.seconds;
  rec.throughput_clock = "cuda events";
  rec.host = stage_rows(prof);
  if (memory) rec.memory = memory_record(prof, *memory, cache.graph_memory());
  fmt::print("\nhost stage times of the {} timed steps: {}\n{}", steps,
             pacer ? (graph ? "'step' is the host's: a graph launch, and the wait for the GPU when "
                              "the steps in flight are at their bound; 'period' is the loop's"
                            : "inner stages: the time to enqueue, not to run; 'step' includes the "
                              "wait for the GPU when the steps in flight are at their bound")
                   : (graph ? "'step' is the host's time to launch the graph, 'period' the loop's"
                            : "the time to enqueue, not to run; 'period' is the loop's"),
             memory ? stage_table(prof, *memory) : stage_table(prof));
  if (dev) {
    fmt::print(
        "\ndevice stage times: stages on the {} sampled steps joined (1 step in {} is stamped; {} "
        "lost), 'step' and 'period' over the steps not stamped{}:\n{}",
        dev->joined(), dev->options().sample_every, dev->dropped(),
        dev->pacer() ? "" : " (unpaced: on the sampled steps)",
        cuda::device_stage_table(prof, *dev));
    rec.device = cuda::device_record_rows(prof, *dev);
    rec.device_joined = dev->joined();
    rec.device_untimed = dev->dropped();
    rec.device_sample_every = dev->options().sample_every;
  }
  if (graph) {
    const auto& c = cache.counters();
    const auto cold = cache.cold_start(key);
    GraphCacheRecord g{c.warmup_runs,
                       c.captures,
                       c.instantiations,
                       c.replays,
                       cold ? cold->capture_s : 0.0,
                       cold ? cold->instantiate_s : 0.0};
    fmt::print(
        "\ngraph cache: {} warm-up runs, {} capture, {} instantiation, {} replays; cold start on "
        "the host clock: capture {:.1f} us + instantiate {:.1f} us\n",
        g.warmup_runs, g.captures, g.instantiations, g.replays, g.capture_s * 1e6,
        g.instantiate_s * 1e6);
    rec.graph_cache = g;
  }
  if (pacer) {
    const auto& c = pacer->counters();
    rec.pacer = PacerRecord{in_flight, c.waits, c.most_in_flight, c.wait_s};
    fmt::print(
        "steps in flight: at most {}; {} of {} steps waited for the GPU ({:.1f} ms, host clock)\n",
        c.most_in_flight, c.waits, c.steps, c.wait_s * 1e3);
  }
  rec.fps = prof.fps().total_fps();
  rec.fps_line = fps_json(prof.fps());
  fmt::print(
      "\nthe GPU delivered {} env-steps/s over the {} timed steps (CUDA events, {:.1f} us per "
      "step); FPS line: {} ({} clock, {} samples); ratio {:.4f}\n\n",
      format_thousands(rec.throughput), steps, rec.seconds / steps * 1e6, or_none(rec.fps),
      prof.fps().clock_kind() == FpsClock::kDevice ? "GPU" : "host", prof.fps().num_samples(),
      rec.fps / rec.throughput);
  if (rec.memory) fmt::print("{}\n", memory_line(*rec.memory));
  if (json) json->add(rec);
}

}  // namespace

int run_cuda(const Args& args, JsonReport* json) {
  std::string why;
  if (!cuda::device_available(&why)) throw std::runtime_error("--backend cuda: " + why);
  const engine::Params params;
  cuda::Stream stream;
  const GpuInfo gpu = gpu_info(stream);
  fmt::print(
      "GPU: {} (sm_{}), driver {}, runtime {}, SM clock {:.0f} MHz at start ({:.0f} nominal)\n",
      gpu.name, gpu.compute_capability, gpu.driver_version, gpu.runtime_version, gpu.sm_clock_mhz,
      gpu.sm_clock_nominal_mhz);
  if (json) json->set_gpu(gpu);
  const int warmup = args.warmup >= 0 ? args.warmup : 10;
  if (args.sweep) {
    const std::vector<int> sizes =
        args.n_envs.empty() ? std::vector<int>{1024, 4096, 30000, 262144} : args.n_envs;
    const int steps = args.steps ? args.steps : 300;
    fmt::print(
        "speed_benchmark sweep: eager launches vs graph replay, {} steps each, {} kernels per "
        "step, GPU time ({})\n\n{:>9} {:>14} {:>14} {:>18} {:>18} {:>8}\n",
        steps, 3 * params.substeps + 4, cuda::to_string(cuda::StopwatchClock::kDevice), "n_envs",
        "eager us/step", "graph us/step", "eager env-steps/s", "graph env-steps/s", "speedup");
    for (const int n : sizes) {
      const RunResult e = timed_run(params, n, false, warmup, steps, stream);
      const RunResult g = timed_run(params, n, true, warmup, steps, stream);
      fmt::print("{:>9} {:>14.1f} {:>14.1f} {:>18} {:>18} {:>7.2f}x\n", n, e.us_per_step,
                 g.us_per_step, format_thousands(e.fps, 0), format_thousands(g.fps, 0),
                 e.us_per_step / g.us_per_step);
      std::fflush(stdout);
      if (json) json->add_sweep({n, e.us_per_step, g.us_per_step});
    }
    fmt::print("\n");
    profiled_run(params, sizes.front(), true, warmup, 1000, true, stream, args, json);
    if (sizes.size() > 1)
      profiled_run(params, sizes.back(), true, warmup, 300, true, stream, args, json);
    return 0;
  }
  const int steps = args.steps ? args.steps : 1000;
  for (const int n : args.n_envs.empty() ? std::vector<int>{30000} : args.n_envs)
    profiled_run(params, n, !args.eager, warmup, steps, args.quiet, stream, args, json);
  return 0;
}

}  // namespace simprof::examples
