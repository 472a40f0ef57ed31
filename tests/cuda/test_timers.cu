// SPDX-License-Identifier: MIT
// Per-env clock-counter timers on the GPU. Compiled with SIMPROF_TIMER_CHECKS=1 so the device-side
// bounds check is on, as in a debug build.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "demo_engine/cpu_engine.hpp"
#include "demo_engine/cuda_engine.hpp"
#include "gpu_test.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/timing/device_timer_buffer.hpp"

using namespace simprof;
using namespace simprof::cuda;
using simprof::cuda::gputest::GpuTest;

namespace {

constexpr unsigned long long kUnitNs = 4000;  // env e spins (e + 1) x 4 us

// One env per block: env e spins (e + 1) units of the global timer, timed by a cycle chain into
// `cycles` and a nanosecond chain into `ns`.
__global__ void spin_per_env(TimerView cycles, TimerView ns) {
  const int e = blockIdx.x;
  TimerChain<CycleCounter> c(cycles, e);
  TimerChain<GlobalTimerNs> t(ns, e);
  const unsigned long long t0 = global_timer_ns();
  while (global_timer_ns() - t0 < kUnitNs * (e + 1)) {
  }
  c.lap(0);
  t.lap(0);
}

__global__ void stamp_now(TimerView v) { v.record(0, threadIdx.x, global_timer_ns()); }

__global__ void out_of_range(TimerView v) { v.record(v.rows, 0, 1); }

[[noreturn]] void record_out_of_range_then_exit() {
  Stream s;
  DeviceTimerBuffer b({"a", "b"}, 4);
  out_of_range<<<1, 1, 0, s>>>(b.view());
  gputest::synchronize_or_exit(s);
}

}  // namespace

TEST_F(GpuTest, EnvDependentSpinsKeepTheirOrderAndRatios) {
  const int n = 16;
  Stream stream;
  DeviceTimerBuffer cycles({"spin"}, n), ns({"spin"}, n, TimerUnit::kNanoseconds);
  for (int i = 0; i < 3; ++i)  // the first runs bring the SM clock up from idle
    spin_per_env<<<n, 1, 0, stream>>>(cycles.view(), ns.view());
  SIMPROF_CUDA_CHECK_LAUNCH("spin_per_env");
  const TimerFrame fc = cycles.read(stream);
  const TimerFrame fn = ns.read(stream);
  for (int e = 0; e < n; ++e) {
    const double want_ns = static_cast<double>(kUnitNs * (e + 1));
    EXPECT_GE(static_cast<double>(fn.ticks(0, e)), want_ns) << e;
    SIMPROF_TIMING EXPECT_NEAR(static_cast<double>(fn.ticks(0, e)), want_ns, 0.05 * want_ns + 200)
        << e;
    if (e > 0) {
      SIMPROF_TIMING EXPECT_GT(fc.ticks(0, e), fc.ticks(0, e - 1)) << e;
    }
    const double ratio = static_cast<double>(fc.ticks(0, e)) / static_cast<double>(fc.ticks(0, 0));
    SIMPROF_TIMING EXPECT_NEAR(ratio, e + 1.0, 0.10 * (e + 1.0)) << e;
    // Cycles / nominal clock approximate seconds: SM clocks boost and throttle, so 20 %.
    SIMPROF_TIMING EXPECT_NEAR(fc.seconds(0, e) / fn.seconds(0, e), 1.0, 0.20) << e;
  }
  RecordProperty("cycles_per_ns_env15", std::to_string(static_cast<double>(fc.ticks(0, 15)) /
                                                       static_cast<double>(fn.ticks(0, 15))));
  EXPECT_DOUBLE_EQ(cycles.ticks_per_second(), clock_freq_hz());
  EXPECT_GT(clock_freq_hz(), 1e8);
}

TEST_F(GpuTest, ReadingsInsideAReplayedGraphChangeEveryReplay) {
  Stream stream;
  DeviceTimerBuffer b({"t"}, 32, TimerUnit::kNanoseconds);
  GraphCacheOptions o;
  o.warmup = 0;
  GraphCache cache(stream, o);
  std::uint64_t prev = 0;
  for (int i = 0; i < 5; ++i) {
    cache.run({32}, [&](cudaStream_t s) { stamp_now<<<1, 32, 0, s>>>(b.view()); });
    const TimerFrame f = b.read(stream);
    EXPECT_GT(f.ticks(0, 31), prev) << "replay " << i;
    prev = f.ticks(0, 31);
  }
  EXPECT_EQ(cache.counters().replays, 5u);
}

TEST_F(GpuTest, AsyncReadbackNeverWaitsAndCatchesUp) {
  SIMPROF_SKIP_GATED_UNDER_SANITIZER();
  Stream stream;
  DeviceTimerBuffer b({"t"}, 8, TimerUnit::kNanoseconds);
  EXPECT_FALSE(b.latest().has_value());
  gputest::Gate gate;
  gate.hold(stream);  // the GPU waits until the host opens the gate
  stamp_now<<<1, 8, 0, stream>>>(b.view());
  b.read_async(stream);
  EXPECT_FALSE(b.latest().has_value());  // still running: no waiting, no stale frame
  gate.open();
  stream.synchronize();
  const auto f = b.latest();
  ASSERT_TRUE(f.has_value());
  const std::uint64_t t = f->ticks(0, 7);
  EXPECT_GT(t, 0u);
  EXPECT_FALSE(b.latest().has_value());  // the same frame is never returned twice
  EXPECT_EQ(b.read(stream).ticks(0, 7), t);
}

TEST_F(GpuTest, OutOfRangeIsAnError) {
  DeviceTimerBuffer b({"a", "b"}, 4);
  Stream s;
  const TimerFrame f = b.read(s);
  EXPECT_THROW(f.ticks(2, 0), std::out_of_range);
  EXPECT_THROW(f.ticks(0, 4), std::out_of_range);
  EXPECT_THROW(b.labels().row("c"), std::invalid_argument);
  EXPECT_THROW(DeviceTimerBuffer({"a"}, 0), std::invalid_argument);
}

// A device fault on purpose: StickyErrors tests are kept out of compute-sanitizer's runs.
using StickyErrors = GpuTest;

TEST_F(StickyErrors, OutOfRangeRecordTrapsAndSurfacesAsACudaError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The kernel prints the check (to stdout) and traps; the host's synchronisation reports a
  // CudaError.
  EXPECT_EXIT(record_out_of_range_then_exit(), ::testing::ExitedWithCode(3),
              "cudaStreamSynchronize.*cudaError");
}

TEST_F(GpuTest, SolverTimersOnTheCudaEngine) {
  engine::Params p;
  const int n = gputest::scaled(512, 64);
  Stream stream;
  engine::CudaEngine plain(p, n, stream, 11), timed(p, n, stream, 11);
  engine::CpuEngine cpu(p, n, 11);
  DeviceTimerBuffer t({"solve", "forces", "contacts", "integrate"}, n);
  const TimerView v = t.view();
  for (int i = 0, steps = gputest::scaled(50, 5); i < steps; ++i) {
    plain.enqueue_solver(stream, nullptr);
    plain.enqueue_sensors(stream);
    timed.enqueue_solver(stream, &v);
    timed.enqueue_sensors(stream);
    cpu.step_solver(nullptr);
  }
  EXPECT_EQ(plain.snapshot(stream), timed.snapshot(stream)) << "timing changed the physics";
  const auto a = cpu.snapshot(), b = timed.snapshot(stream);
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
  EXPECT_LE(d, 1e-4);
  const TimerFrame f = t.read(stream);
  for (int e = 0; e < n; ++e) {
    EXPECT_EQ(f.ticks(0, e), f.ticks(1, e) + f.ticks(2, e) + f.ticks(3, e)) << e;
    EXPECT_GT(f.ticks(2, e), 0u) << e;
  }
}
