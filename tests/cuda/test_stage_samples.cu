// SPDX-License-Identifier: MIT
// DeviceStageTimer::samples() of a paced loop: what a run record keeps for `simprof compare`.
#include <gtest/gtest.h>

#include <vector>

#include "gpu_test.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "test_util.hpp"

using namespace simprof::cuda;
namespace gt = simprof::cuda::gputest;
using simprof::cuda::gputest::GpuTest;

// Paced with the defaults (sample_every 16), the pacer times one step end in 8: the steps of a
// group share its measured period. Each group is one sample, however many steps share it, so the
// samples a record keeps are independent measurements; the mean still counts every step.
TEST_F(GpuTest, APacedPeriodIsOneSampleAGroup) {
  Stream stream;
  simprof::StepProfiler prof(simprof::testing::quiet(), 0);
  DeviceStageTimer dev(prof, stream);
  for (int i = 0; i < 160; ++i) {
    auto step = prof.step();
    auto physics = prof.stage("physics");
    gt::spin(20'000, stream);
  }
  dev.synchronize();
  const std::vector<double> period = dev.samples("period");
  const std::uint64_t steps = dev.count("period");
  ASSERT_GT(period.size(), 4u);
  EXPECT_LT(period.size(), steps);
  EXPECT_LE(steps, 8 * period.size()) << "at most 8 steps share a sample";
  EXPECT_EQ(dev.samples("physics").size(), dev.count("physics")) << "a stage: one a sampled step";
  EXPECT_EQ(dev.count("physics"), 10u);  // steps 0, 16, ..., 144
}
