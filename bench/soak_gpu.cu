// SPDX-License-Identifier: MIT
// soak_gpu: many replayed steps of the demo engine with everything attached — the CUPTI kernel
// tracer in a trace session repeating forever, the device stage timer (pacing the loop), per-env
// device timers read back asynchronously, memory accounting (DeviceAllocations and a MemoryTracker,
// its counters in every trace window), the FPS line — sampling host resident memory and the
// device's used memory along the way. Exits non-zero when either grew by more than its bound after
// the warm-up, when a trace window was lost, or when spans were dropped.
//
//   soak_gpu --steps 1000000 --n-envs 1024
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "cli.hpp"
#include "demo_engine/cuda_engine.hpp"
#include "resident.hpp"
#include "simprof/cuda.hpp"

extern "C" long long simprof_live_malloc_blocks() noexcept;  // malloc_count.cpp

namespace {

using namespace simprof;

long device_used_kb() {
  std::size_t free = 0, total = 0;
  SIMPROF_CUDA_CHECK(cudaMemGetInfo(&free, &total));  // a sync point: sampled, not per step
  return static_cast<long>((total - free) / 1024);
}

}  // namespace

int main(int argc, char** argv) try {
  int steps = 1'000'000, n_envs = 1024, window_every = 10'000, host_kb = 2048, device_kb = 0;
  cli::Flags(
      "soak_gpu [--steps N] [--n-envs N] [--window-every N] [--max-host-growth-kb K]\n"
      "         [--max-device-growth-kb K]\n")
      .integer("--steps", steps, 1000)
      .integer("--n-envs", n_envs, 1)
      .integer("--window-every", window_every, 10)
      .integer("--max-host-growth-kb", host_kb, 0)
      .integer("--max-device-growth-kb", device_kb, 0)
      .parse(argc, argv);
  std::string why;
  if (!cuda::device_available(&why)) {
    fmt::print("soak_gpu: no GPU: {}\n", why);
    return 0;
  }
  default_logger()->set_level(spdlog::level::err);
  ProfilingOptions o;
  StepProfiler prof(o, n_envs);
  prof.fps().set_logger(std::make_shared<spdlog::logger>(
      "soak_gpu", std::make_shared<spdlog::sinks::null_sink_mt>()));
  cuda::Stream stream;
  cuda::DeviceAllocations allocations;  // memory accounting on: every CUDA allocation from here
  engine::CudaEngine eng(engine::Params{}, n_envs, stream);
  eng.attach(prof);
  cuda::DeviceTimerBuffer timers({"solve", "forces", "contacts", "integrate"}, n_envs);
  const TimerView view = timers.view();
  cuda::DeviceStageTimer dev(prof, stream);  // paces the loop
  TraceOptions t;
  t.schedule = Schedule{window_every - 2, 1, 1, 0, 0};
  t.ranks = RankInfo{};
  TraceSession trace(prof, t);
  cuda::KernelTracer tracer(prof);
  auto tracer_joined = trace.add_source(&tracer);
  // Device and host (the hook in soak_gpu_hook.cpp); warned about after 10 steps.
  MemoryTracker memory(prof, &allocations, &host_allocations());
  auto memory_joined = trace.add_source(&memory);  // counter tracks in every window
  const std::string path = fmt::format("/tmp/simprof_soak_gpu_{}.json", ::getpid());
  std::uint64_t written = 0, kernels = 0;
  trace.on_trace_ready([&](const Trace& tr, std::uint64_t) {
    write_chrome_trace(tr, path);
    ++written;
    for (const Span& s : tr.spans) kernels += s.kind == SpanKind::kKernel;
  });
  cuda::GraphCache cache(stream, {}, dev.instrumentation());
  std::vector<long> host, device;
  long host_warm = 0, device_warm = 0;
  long long blocks_warm = 0;  // live malloc blocks of the whole process (malloc_count.cpp)
  const int sample_every = std::max(1, steps / 50);
  std::uint64_t frames = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    {
      auto step = prof.step();
      cache.run({n_envs}, [&](cudaStream_t s) {
        eng.enqueue_solver(s, &view);
        eng.enqueue_sensors(s);
      });
    }
    if (i % 100 == 0) timers.read_async(stream);
    if (timers.latest()) ++frames;
    if (i % sample_every == 0) {
      host.push_back(bench::resident_kb());
      device.push_back(device_used_kb());
      if (i >= steps / 10 && host_warm == 0) {
        host_warm = host.back();
        device_warm = device.back();
        blocks_warm = simprof_live_malloc_blocks();
      }
    }
  }
  dev.synchronize();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  host.push_back(bench::resident_kb());
  device.push_back(device_used_kb());
  const long long blocks_end = simprof_live_malloc_blocks();
  std::remove(path.c_str());
  fmt::print(
      "soak_gpu: {} replayed steps of {} envs in {:.1f} s ({:.1f} us per step), {} trace "
      "windows ({} kernels traced), {} stamped steps joined, {} lost; {} timer reads\n",
      steps, n_envs, seconds, seconds / steps * 1e6, written, kernels, dev.joined(), dev.dropped(),
      frames);
  fmt::print("host resident: start {} KiB, warm {} KiB, end {} KiB, peak {} KiB\n", host.front(),
             host_warm, host.back(), *std::max_element(host.begin(), host.end()));
  fmt::print("device used:   start {} KiB, warm {} KiB, end {} KiB, peak {} KiB\n", device.front(),
             device_warm, device.back(), *std::max_element(device.begin(), device.end()));
  fmt::print("dropped spans {}; tracer {}\n", trace.dropped(),
             tracer.enabled() ? "on" : tracer.disabled_reason());
  fmt::print(
      "memory accounting: {} CUDA allocations ({} bytes) in {} steps, {} steady steps allocated; "
      "in use {} KiB at the end, peak {} KiB; graph memory {} KiB\n",
      memory.total("step", MemorySide::kDevice).allocs,
      memory.total("step", MemorySide::kDevice).alloc_bytes, memory.steps("step"),
      memory.steady_allocating_steps(), memory.device_in_use_bytes() / 1024,
      memory.device_peak_bytes() / 1024, cache.graph_memory() / 1024);
  const AllocCounts heap = memory.total("step", MemorySide::kHost);
  fmt::print(
      "host heap inside the steps (operator new): {} allocations ({} bytes), {} frees ({} bytes "
      "known); {:.4f} allocations per step\n",
      heap.allocs, heap.alloc_bytes, heap.frees, heap.free_bytes,
      static_cast<double>(heap.allocs) /
          static_cast<double>(std::max<std::uint64_t>(1, memory.steps("step"))));
  // Every malloc of the process (CUPTI's and the driver's too): a leak of one block per stamped
  // step (a plain publish launch under CUPTI, until 2026-12-02) is 56,250 over 900,000 steps.
  constexpr long long kBlocksBound = 1024;
  fmt::print("live malloc blocks (every thread): warm {}, end {} ({:+} over the last {} steps)\n",
             blocks_warm, blocks_end, blocks_end - blocks_warm, steps - steps / 10);
  bool ok = tracer.enabled() && allocations.enabled();
  if (blocks_end - blocks_warm > kBlocksBound) {
    fmt::print("FAIL: {} more live malloc blocks after the warm-up (bound {})\n",
               blocks_end - blocks_warm, kBlocksBound);
    ok = false;
  }
  if (memory.steady_allocating_steps() != 0) {
    fmt::print("FAIL: replayed steps allocated on the device\n");
    ok = false;
  }
  if (host.back() - host_warm > host_kb) {
    fmt::print("FAIL: host memory grew {} KiB after the warm-up (bound {})\n",
               host.back() - host_warm, host_kb);
    ok = false;
  }
  if (device.back() - device_warm > device_kb) {
    fmt::print("FAIL: device memory grew {} KiB after the warm-up (bound {})\n",
               device.back() - device_warm, device_kb);
    ok = false;
  }
  if (written != trace.windows() ||
      written < static_cast<std::uint64_t>(steps / window_every) - 1 || trace.dropped() != 0 ||
      dev.dropped() != 0) {
    fmt::print("FAIL: trace windows or drops\n");
    ok = false;
  }
  fmt::print("{}\n", ok ? "soak ok" : "soak FAILED");
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "soak_gpu: %s\n", e.what());
  return 2;
}
