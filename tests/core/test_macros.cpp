// SPDX-License-Identifier: MIT
// SIMPROF_STEP and SIMPROF_STAGE: the same timings as the scopes they stand for, one call site
// serving several profilers, a null profiler measuring nothing. (Compiled out: the compile_out
// consumer test.)
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "simprof/base/manual_clock.hpp"
#include "simprof/profiler/macros.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "test_util.hpp"

using simprof::ManualClock;
using simprof::ProfilingOptions;
using simprof::StepProfiler;

using simprof::testing::quiet;

namespace {

// One instrumented step: physics 3 ms, the IMU 1 ms, 0.5 ms between them outside any stage.
void engine_step(StepProfiler* prof, ManualClock* mc) {
  SIMPROF_STEP(prof);
  {
    SIMPROF_STAGE(prof, "physics");
    if (mc) mc->advance(0.003);
  }
  if (mc) mc->advance(0.0005);
  {
    SIMPROF_STAGE(prof, "sensors/Imu");
    if (mc) mc->advance(0.001);
  }
}

// The same site reached with a reference.
void stage_by_reference(StepProfiler& prof, ManualClock& mc, double s) {
  SIMPROF_STAGE(prof, "rendering");
  mc.advance(s);
}

}  // namespace

TEST(Macros, StepAndStagesGiveTheTimingsOfTheScopes) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  for (int i = 0; i < 3; ++i) engine_step(&prof, &mc);
  EXPECT_EQ(prof.steps(), 3u);
  const auto& t = prof.timings();
  EXPECT_NEAR(t.at("physics"), 0.003, 1e-12);
  EXPECT_NEAR(t.at("sensors/Imu"), 0.001, 1e-12);
  EXPECT_NEAR(t.at("sensors"), 0.001, 1e-12);  // a class rolls up into its parent, as with scopes
  EXPECT_NEAR(t.at("step"), 0.0045, 1e-12);
  EXPECT_NEAR(t.at("period"), 0.0045, 1e-12);
}

TEST(Macros, OneCallSiteServesEveryProfiler) {
  // Two profilers with the names registered in different orders: the site's cached id belongs to
  // one profiler only, so alternating between them must look the name up again each time.
  ManualClock mc;
  StepProfiler a(quiet(), 0, mc.clock()), b(quiet(), 0, mc.clock());
  EXPECT_NE(a.instance_id(), b.instance_id());
  b.stage_id("video");
  b.stage_id("recorders");  // "rendering" gets a different id in b than in a
  for (int i = 0; i < 4; ++i) {
    for (StepProfiler* p : {&a, &b}) {
      p->begin_step();
      stage_by_reference(*p, mc, p == &a ? 0.002 : 0.007);
      p->end_step();
    }
  }
  EXPECT_NE(a.find_stage("rendering"), b.find_stage("rendering"));
  EXPECT_NEAR(a.timings().at("rendering"), 0.002, 1e-12);
  EXPECT_NEAR(b.timings().at("rendering"), 0.007, 1e-12);
  EXPECT_FALSE(a.timings().contains("video"));
  // A profiler made after another one died gets a new instance id, so a site never takes a stale
  // id for it, even at the same address.
  std::uint32_t last = 0;
  for (int i = 0; i < 3; ++i) {
    StepProfiler c(quiet(), 0, mc.clock());
    EXPECT_NE(c.instance_id(), last);
    last = c.instance_id();
    c.stage_id(i % 2 ? "x" : "y");
    c.begin_step();
    stage_by_reference(c, mc, 0.001);
    c.end_step();
    EXPECT_NEAR(c.timings().at("rendering"), 0.001, 1e-12);
  }
}

TEST(Macros, NullProfilerMeasuresNothing) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  engine_step(&prof, &mc);  // the sites now know this profiler
  const std::size_t stages = prof.num_stages();
  for (int i = 0; i < 3; ++i) engine_step(nullptr, &mc);  // the same sites, null: the work runs
  EXPECT_EQ(mc.now_ns(), 4 * 4'500'000) << "the null steps ran their bodies";
  EXPECT_EQ(prof.steps(), 1u) << "and were not counted";
  EXPECT_EQ(prof.num_stages(), stages);
  engine_step(&prof, &mc);
  EXPECT_EQ(prof.steps(), 2u);
  EXPECT_NEAR(prof.timings().at("physics"), 0.003, 1e-12);
  // The period spans the three unprofiled steps: 4 x 4.5 ms since the first step began.
  EXPECT_NEAR(prof.timings().at("period"), 0.018, 1e-12);
}

TEST(Macros, ThreadsWithTheirOwnProfilersShareTheSites) {
  constexpr int kThreads = 4, kSteps = 2000;
  std::vector<ManualClock> clocks(kThreads);
  std::vector<std::unique_ptr<StepProfiler>> profs;
  for (int i = 0; i < kThreads; ++i) {
    profs.push_back(std::make_unique<StepProfiler>(quiet(), 0, clocks[i].clock()));
    for (int k = 0; k < i; ++k) profs.back()->stage_id("pad" + std::to_string(k));  // other ids
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      for (int s = 0; s < kSteps; ++s) engine_step(profs[i].get(), &clocks[i]);
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(profs[i]->steps(), static_cast<std::uint64_t>(kSteps)) << i;
    EXPECT_NEAR(profs[i]->timings().at("physics"), 0.003, 1e-12) << i;
    EXPECT_NEAR(profs[i]->timings().at("sensors"), 0.001, 1e-12) << i;
  }
}
