// SPDX-License-Identifier: MIT
// GpuProfile: the whole GPU truth from one object, whatever the order of construction and
// destruction — and the hand-wired pieces, which no longer give a wrong number without a word: a
// sampled step replayed without stamps is counted and said, and eager stamps never make a kernel
// tracer's trace impossible.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include "gpu_test.hpp"
#include "kernel_tracer_test.hpp"
#include "simprof/cuda/gpu_profile.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/timing/kernel_timer.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"
#include "simprof/cuda/timing/step_pacer.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "test_util.hpp"
#include "trace_test.hpp"

using namespace simprof;
using namespace simprof::cuda;
namespace gt = simprof::cuda::gputest;
using gt::GpuTest;
using gt::of_kind;
using simprof::testing::quiet;
using simprof::testing::SimprofLog;

namespace {

__global__ void physics_spin(unsigned long long ns) { gt::spin_for_ns(ns); }
// Fills the GPU: every SM busy, as a 30,000-env kernel is.
__global__ void render_spin(unsigned long long ns) { gt::spin_for_ns(ns); }

constexpr unsigned long long kPhysics = 60'000, kRender = 30'000;

// physics: two 30 us kernels; render: a GPU-filling 30 us kernel.
void step_body(StepProfiler& prof, cudaStream_t s) {
  {
    auto st = prof.stage("physics");
    physics_spin<<<1, 32, 0, s>>>(kPhysics / 2);
    physics_spin<<<1, 32, 0, s>>>(kPhysics / 2);
  }
  {
    auto st = prof.stage("render");
    render_spin<<<264, 256, 0, s>>>(kRender);
  }
  SIMPROF_CUDA_CHECK_LAUNCH("step_body");
}

void warm(Stream& stream) {  // modules loaded before anything is timed
  physics_spin<<<1, 1, 0, stream.get()>>>(1000);
  render_spin<<<1, 1, 0, stream.get()>>>(1000);
  stream.synchronize();
}

void run(StepProfiler& prof, GraphCache& cache, int steps) {
  for (int i = 0; i < steps; ++i) {
    auto step = prof.step();
    cache.run({1}, [&](cudaStream_t s) { step_body(prof, s); });
  }
}

GpuProfileOptions every(int stage, int kernel) {
  GpuProfileOptions o;
  o.stage_sample_every = stage;
  o.kernel_sample_every = kernel;
  return o;
}

}  // namespace

// docs/gpu-truth.md's first example: a cache made before the profile, no wiring, replayed steps.
TEST_F(GpuTest, OneObjectGivesStagesKernelsAndTheFpsLineOfReplayedSteps) {
  Stream stream;
  warm(stream);
  StepProfiler prof(quiet(), 1024);
  GraphCache cache(stream);  // before the profile: it still gets every tool's stamps
  GpuProfile gpu(prof, stream, every(4, 8));
  EXPECT_EQ(prof.fps().clock_kind(), FpsClock::kDevice);
  const int steps = gt::scaled(200, 40);
  run(prof, cache, steps);
  gpu.finish();
  EXPECT_EQ(gpu.stages().unstamped(), 0u);
  EXPECT_EQ(gpu.stages().dropped(), 0u);
  EXPECT_EQ(gpu.kernels().dropped(), 0u);
  EXPECT_GT(cache.counters().instrumented_replays, 0u);
  // Stage times of the replayed steps: the warm-up's (3 eager steps) are few among them.
  EXPECT_GE(gpu.stages().count("physics"), static_cast<std::uint64_t>(steps / 4 - 4));
  SIMPROF_TIMING EXPECT_NEAR(gpu.mean("physics"), kPhysics * 1e-9, 0.05 * kPhysics * 1e-9);
  SIMPROF_TIMING EXPECT_NEAR(gpu.mean("render"), kRender * 1e-9, 0.10 * kRender * 1e-9);
  EXPECT_GE(gpu.kernels().replays(), static_cast<std::uint64_t>(steps / 8 - 2));
  const std::string report = gpu.report();
  for (const char* want : {"physics", "render", "physics_spin", "render_spin", "sampled steps"})
    EXPECT_NE(report.find(want), std::string::npos) << want << " in\n" << report;
  EXPECT_EQ(gpu.pacer().options().max_in_flight, 2);
}

TEST_F(GpuTest, OneProfilePerProfilerAndBadOptionsAreRefused) {
  Stream stream;
  StepProfiler prof(quiet(), 0);
  GpuProfile gpu(prof, stream, every(16, 0));
  const std::string again =
      simprof::testing::error_of<std::logic_error>([&] { GpuProfile second(prof, stream); });
  EXPECT_NE(again.find("owns device tools already"), std::string::npos) << again;
  EXPECT_EQ(prof.fps().clock_kind(), FpsClock::kDevice) << "the refused one took the FPS clock";
  EXPECT_NE(simprof::testing::error_of<std::logic_error>([&] {
              gpu.kernels();
            }).find("kernel_sample_every = 0"),
            std::string::npos);
  StepProfiler other(quiet(), 0);
  GpuProfileOptions bad;
  bad.max_in_flight = 0;
  EXPECT_NE(simprof::testing::error_of<std::invalid_argument>([&] {
              GpuProfile g(other, stream, bad);
            }).find("max_in_flight = 0 (expected >= 1)"),
            std::string::npos);
  EXPECT_EQ(other.tools(), nullptr);  // nothing left behind by the refusal
}

TEST_F(GpuTest, ProfilerCacheAndProfileGoInAnyOrder) {
  Stream stream;
  warm(stream);
  // The profiler first: the tools go with it; the profile says so, and the cache replays on.
  {
    auto prof = std::make_unique<StepProfiler>(quiet(), 0);
    GraphCache cache(stream);
    GpuProfile gpu(*prof, stream, every(2, 4));
    run(*prof, cache, 12);
    gpu.finish();
    prof.reset();
    EXPECT_FALSE(gpu.alive());
    const std::string gone = simprof::testing::error_of<std::logic_error>([&] { gpu.finish(); });
    EXPECT_NE(gone.find("StepProfiler was destroyed"), std::string::npos) << gone;
    StepProfiler next(quiet(), 0);
    run(next, cache, 3);  // the plain graph: no tool is left to ask
    stream.synchronize();
  }
  // The profile first, then the cache: the profiler takes another profile afterwards.
  {
    StepProfiler prof(quiet(), 0);
    auto cache = std::make_unique<GraphCache>(stream);
    {
      GpuProfile gpu(prof, stream, every(2, 4));
      run(prof, *cache, 12);
      gpu.finish();
    }
    EXPECT_EQ(prof.tools(), nullptr);
    EXPECT_EQ(prof.fps().clock_kind(), FpsClock::kHost);
    run(prof, *cache, 3);
    cache.reset();
    GpuProfile again(prof, stream, every(2, 0));
    GraphCache fresh(stream);
    run(prof, fresh, 8);
    again.finish();
    EXPECT_GT(again.stages().joined(), 0u);
  }
}

// Issue 41, case 2: a cache not given the timer's instrumentation replays unstamped steps. They
// are counted, said once with the fix, and in no mean (the warm-up's eager steps alone are).
TEST_F(GpuTest, HandWiredCacheWithoutTheTimersStampsIsCountedAndSaid) {
  Stream stream;
  warm(stream);
  SimprofLog log;
  StepProfiler prof(quiet(), 0);
  DeviceStageTimerOptions o;
  o.sample_every = 2;
  DeviceStageTimer dev(prof, stream, o);
  GraphCache cache(stream);  // no attach(dev.instrumentation())
  run(prof, cache, 40);
  {  // step 40: sampled and replayed, but vetoed: not counted
    auto step = prof.step();
    cache.run({1}, [&](cudaStream_t s) { step_body(prof, s); });
    prof.veto_step();
  }
  dev.synchronize();
  EXPECT_EQ(dev.unstamped(), 18u) << "steps 4, 6, ..., 38: replayed, sampled, unstamped";
  EXPECT_EQ(dev.count("physics"), 2u) << "the eager warm-up steps 0 and 2";
  EXPECT_EQ(log.count("ran no stage boundary and no stamped graph"), 1) << log.str();
  EXPECT_NE(log.str().find("instrumentation()"), std::string::npos) << log.str();
  const std::string table = device_stage_table(prof, dev);
  EXPECT_NE(table.find("18 sampled steps unstamped"), std::string::npos) << table;
}

// Issue 41, case 3 (a kernel timer outrun by its host says so): test_kernel_timer.cu,
// KernelTimerDropsASampleWhenTheRingIsFullAndSaysSo.

// Issue 41, case 4: a kernel tracer's trace of eager steps with stamps in them (GPU-filling
// kernels between them) is one the device could have run: KernelTraceSession checks every window.
TEST_F(GpuTest, EagerStampsKeepAKernelTracersTracePhysical) {
  SIMPROF_SKIP_GATED_UNDER_SANITIZER();
  Stream stream;
  warm(stream);
  StepProfiler prof(quiet(), 0);
  gt::KernelTraceSession kt(prof, Schedule{0, 1, 6, 1, 0});
  SIMPROF_REQUIRE_CUPTI(kt.tracer);
  DeviceStageTimerOptions o;
  o.sample_every = 1;
  DeviceStageTimer dev(prof, stream, o);
  GraphCache cache(stream, {}, dev.instrumentation());
  for (int i = 0; i < 10; ++i) {  // eager steps, then mixed: an eager stage around a replay
    auto step = prof.step();
    if (i < 5) {
      step_body(prof, stream);
    } else {
      auto outer = prof.stage("outer");
      cache.run({1}, [&](cudaStream_t s) { step_body(prof, s); });
    }
  }
  dev.synchronize();
  ASSERT_EQ(kt.traces.size(), 1u);
  int stamps = 0;
  for (const auto* k : of_kind(kt.traces[0], SpanKind::kKernel))
    stamps += k->name.find("eager_stamp_kernel") != std::string::npos;
  EXPECT_GT(stamps, 0) << "the window holds eager stamps";
  // (Under CUPTI the host launches slower and the GPU waits for it inside a stage: the stage's
  // device time is longer and true. Plain stamps' readings against CUPTI's own records of the
  // same traced steps: DeviceStageTimesAgreeWithCuptiEager, test_gpu_truth.cu.)
}

// The one object's trace windows pass the same checks (TraceSession says any break it finds).
TEST_F(GpuTest, OneObjectsTraceWindowsArePhysical) {
  Stream stream;
  warm(stream);
  SimprofLog log;
  StepProfiler prof(quiet(), 0);
  GpuProfileOptions o = every(1, 2);
  TraceOptions t;
  t.schedule = Schedule{2, 1, 4, 1, 0};
  t.dir = ::testing::TempDir() + "gpu_profile_trace";
  o.trace = t;
  GpuProfile gpu(prof, stream, o);
  std::optional<GraphCache> cache;
  cache.emplace(stream);
  for (int i = 0; i < 12; ++i) {
    auto step = prof.step();
    if (i % 2)
      step_body(prof, stream);
    else
      cache->run({1}, [&](cudaStream_t s) { step_body(prof, s); });
  }
  gpu.finish();
  gpu.trace()->wait();
  EXPECT_EQ(log.count("breaks the trace's causality"), 0) << log.str();
  EXPECT_EQ(gpu.trace()->files().size(), 1u);
}
