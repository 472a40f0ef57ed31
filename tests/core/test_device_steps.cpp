// SPDX-License-Identifier: MIT
// DeviceSteps: the host side of the GPU's step times, fed with made-up device times.
#include <gtest/gtest.h>

#include <cmath>

#include "simprof/base/manual_clock.hpp"
#include "simprof/profiler/device_steps.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "test_util.hpp"

using simprof::DeviceStep;
using simprof::DeviceSteps;
using simprof::FpsClock;
using simprof::ManualClock;
using simprof::ProfilingOptions;
using simprof::StepProfiler;

using simprof::testing::quiet;

namespace {

constexpr double kNone = DeviceStep::kNone;

}  // namespace

TEST(DeviceSteps, PeriodsOfConsecutiveStepsAndTheFpsLineFromTheDevice) {
  ManualClock mc;
  StepProfiler prof(quiet(), 1024, mc.clock());
  DeviceSteps steps(prof, /*feed_fps=*/true);
  EXPECT_EQ(prof.fps().clock_kind(), FpsClock::kDevice);
  EXPECT_TRUE(std::isnan(steps.add(0, true, 90e-6, kNone).period_s));  // nothing before it
  for (std::uint64_t s = 1; s <= 600; ++s) {
    const DeviceStep& d = steps.add(s, true, 90e-6, 100e-6);  // 100 us apart on the GPU
    EXPECT_DOUBLE_EQ(d.period_s, 100e-6) << s;
    EXPECT_EQ(d.end_ns, static_cast<std::int64_t>(s) * 100'000);
    EXPECT_EQ(d.group_end, s) << "a step added alone closes its own period";
  }
  EXPECT_EQ(steps.periods(), 600u);
  EXPECT_NEAR(steps.mean_period_s(), 100e-6, 1e-15);
  EXPECT_NEAR(steps.mean_step_s(), 90e-6, 1e-15);
  // 600 intervals of 100 us: a sample of 500 steps in 50 ms, 10,000 FPS per env: the GPU's rate,
  // whatever the host clock did (it did not move).
  EXPECT_EQ(prof.fps().num_samples(), 1u);
  EXPECT_DOUBLE_EQ(prof.fps().fps_per_env(), 10'000.0);
  steps.flush();  // the last 100 steps, 10 ms, complete a second sample
  EXPECT_EQ(prof.fps().num_samples(), 2u);
  EXPECT_DOUBLE_EQ(prof.fps().last_sample().sample_fps_per_env, 10'000.0);
}

TEST(DeviceSteps, AStepThatLeftNoDeviceTimeNeverWidensThePeriod) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  DeviceSteps steps(prof, /*feed_fps=*/false);
  steps.add(0, true, 50e-6, kNone);
  steps.add(1, true, 50e-6, 60e-6);
  // Steps 2 and 3 left nothing; step 4 ended 180 us after step 1: not a period.
  const DeviceStep& d = steps.add(4, true, 50e-6, 180e-6);
  EXPECT_TRUE(std::isnan(d.period_s));
  EXPECT_EQ(steps.missed(), 2u);
  EXPECT_DOUBLE_EQ(steps.add(5, true, 50e-6, 60e-6).period_s, 60e-6);
  EXPECT_EQ(steps.periods(), 2u);
  EXPECT_NEAR(steps.mean_period_s(), 60e-6, 1e-15);
  EXPECT_EQ(prof.fps().clock_kind(), FpsClock::kHost);  // not fed from here
}

TEST(DeviceSteps, AVetoedStepIsNotCountedAndDropsTheSampleInProgress) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  DeviceSteps steps(prof, /*feed_fps=*/true);
  steps.add(0, true, 10e-6, kNone);
  for (std::uint64_t s = 1; s <= 4; ++s) steps.add(s, true, 10e-6, 10e-3);  // 4 steps, 40 ms
  const DeviceStep& vetoed = steps.add(5, false, 1e-6, 1e-6);
  EXPECT_FALSE(vetoed.completed);
  EXPECT_TRUE(std::isnan(vetoed.period_s));
  EXPECT_TRUE(std::isnan(steps.add(6, true, 10e-6, 10e-3).period_s));  // the step after: none
  // The sample that held steps 1-4 was dropped at the veto; step 6 started a new one.
  for (std::uint64_t s = 7; s <= 11; ++s) steps.add(s, true, 10e-6, 10e-3);
  EXPECT_EQ(prof.fps().num_samples(), 1u);
  EXPECT_EQ(prof.fps().last_sample().steps, 5u);
  EXPECT_DOUBLE_EQ(prof.fps().fps_per_env(), 100.0);
  EXPECT_NEAR(steps.mean_step_s(), 10e-6, 1e-15);  // the vetoed step is not in it
}

TEST(DeviceSteps, TheProfilerStopsTickingAndTheHostClockComesBack) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  {
    DeviceSteps steps(prof, /*feed_fps=*/true);
    for (int i = 0; i < 20; ++i) {
      auto step = prof.step();
      mc.advance(0.010);
    }
    EXPECT_EQ(prof.fps().num_samples(), 0u);  // 200 ms of host steps: not counted
  }
  EXPECT_EQ(prof.fps().clock_kind(), FpsClock::kHost);
  for (int i = 0; i < 7; ++i) {
    auto step = prof.step();
    mc.advance(0.010);
  }
  EXPECT_EQ(prof.fps().num_samples(), 1u);
  EXPECT_DOUBLE_EQ(prof.fps().fps_per_env(), 100.0);
}

TEST(DeviceSteps, AStepAfterAnFpsResetStartsTheSampleAtItsOwnStart) {
  // Steps of 10 ms; between rounds 300 ms of other work on the stream, then fps().reset(). The
  // first step after the reset is timed from its own start (rebased): the new round's sample holds
  // only its steps, and no period holds the other work.
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  DeviceSteps steps(prof, /*feed_fps=*/true);
  steps.add(0, true, kNone, kNone);
  for (std::uint64_t s = 1; s <= 10; ++s) steps.add(s, true, kNone, 10e-3);
  prof.fps().reset();
  const DeviceStep& first = steps.add(11, true, kNone, 10e-3, /*rebased=*/true);
  EXPECT_TRUE(std::isnan(first.period_s));
  EXPECT_EQ(first.end_ns, 10'000'000);
  for (std::uint64_t s = 12; s <= 15; ++s) steps.add(s, true, kNone, 10e-3);
  EXPECT_EQ(prof.fps().num_samples(), 1u);  // 5 steps over 50 ms, from the first one's start
  EXPECT_EQ(prof.fps().last_sample().steps, 5u);
  EXPECT_DOUBLE_EQ(prof.fps().fps_per_env(), 100.0);
  EXPECT_EQ(steps.periods(), 14u);  // 1-10 and 12-15
  EXPECT_NEAR(steps.mean_period_s(), 10e-3, 1e-12);
}
