// SPDX-License-Identifier: MIT
// The stamp costs: measured once per device, reported by both stamping timers and their tables;
// the stage timer's pacer driven by the timer, not attached on its own.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gpu_test.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/kernel_timer.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "test_util.hpp"

using namespace simprof::cuda;
namespace gt = simprof::cuda::gputest;
using simprof::cuda::gputest::GpuTest;
using simprof::testing::quiet;

TEST_F(GpuTest, StampCostsAreMeasuredOncePerDeviceAndReported) {
  Stream a, b;
  simprof::StepProfiler prof(quiet(), 0);
  DeviceStageTimer first(prof, a.get());
  const StampCost cost = first.stamp_cost();
  EXPECT_EQ(cost.device, first.device());
  ASSERT_TRUE(std::isfinite(cost.eager_ns));
  ASSERT_TRUE(std::isfinite(cost.eager_plain_ns));
  EXPECT_GE(cost.eager_ns, 0.0);
  SIMPROF_TIMING EXPECT_GT(cost.eager_ns, 0.0) << "a stamp costs the stage something";
  // The timer takes off what the device's record says, in its launch mode (dependent by default).
  EXPECT_DOUBLE_EQ(first.eager_stamp_seconds(), cost.eager_ns * 1e-9);
  if (!cost.dependent_launch) EXPECT_DOUBLE_EQ(cost.eager_plain_ns, cost.eager_ns);
  // A second timer on another stream of the device measures nothing: the same costs.
  simprof::StepProfiler prof2(quiet(), 0);
  DeviceStageTimer second(prof2, b.get());
  EXPECT_DOUBLE_EQ(second.eager_stamp_seconds(), first.eager_stamp_seconds());
  EXPECT_DOUBLE_EQ(second.stamp_cost().eager_plain_ns, cost.eager_plain_ns);
  // The kernel timer's hop: measured when the first one is made, its hop_ns() until a replay.
  GraphKernelTimer kernels(prof, a.get());
  const StampCost with_hop = kernels.stamp_cost();
  ASSERT_TRUE(std::isfinite(with_hop.hop_ns));
  EXPECT_DOUBLE_EQ(kernels.hop_ns(), with_hop.hop_ns);
  EXPECT_DOUBLE_EQ(with_hop.eager_ns, cost.eager_ns);
  EXPECT_DOUBLE_EQ(first.stamp_cost().hop_ns, with_hop.hop_ns);
  // Said in the stage table.
  for (int i = 0; i < 2; ++i) {
    auto step = prof2.step();
    auto s = prof2.stage("physics");
    gt::spin(10'000, b.get());
  }
  second.synchronize();
  const std::string table = device_stage_table(prof2, second);
  EXPECT_NE(table.find("us an eager stamp"), std::string::npos) << table;
  EXPECT_NE(table.find(", taken off eager stages)"), std::string::npos) << table;
  EXPECT_EQ(table.find("us in traced steps") != std::string::npos, cost.dependent_launch) << table;
}

TEST_F(GpuTest, TheStageTimersPacerIsDrivenByTheTimerNotAttached) {
  Stream s;
  simprof::StepProfiler prof(quiet(), 0);
  DeviceStageTimer paced(prof, s.get());
  ASSERT_NE(paced.pacer(), nullptr);
  EXPECT_EQ(prof.listeners().size(), 1u) << "the timer alone: it calls its pacer first";
  for (int i = 0; i < 20; ++i) {
    auto step = prof.step();
    gt::spin(5'000, s.get());
  }
  paced.synchronize();
  EXPECT_EQ(paced.pacer()->counters().steps, 20u);
  EXPECT_EQ(prof.fps().clock_kind(), simprof::FpsClock::kDevice) << "the pacer feeds the FPS line";
}
