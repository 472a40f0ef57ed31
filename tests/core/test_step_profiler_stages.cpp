// SPDX-License-Identifier: MIT
// What the step profiler's stages measure: the breakdown of a step, nested names, the timings
// window, ids and iteration, statistics and the stage table.
#include <gtest/gtest.h>

#include "step_loop.hpp"
#include "test_util.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "simprof/base/manual_clock.hpp"
#include "simprof/profiler/report.hpp"
#include "simprof/profiler/step_profiler.hpp"

using simprof::kNoStage;
using simprof::kStepStage;
using simprof::ManualClock;
using simprof::ProfilingOptions;
using simprof::StageId;
using simprof::StepProfiler;
using simprof::testing::error_of;
using simprof::testing::steps::Loop;
using simprof::testing::steps::quiet;

TEST(StepProfiler, TheBreakdownOfOneStep) {
  Loop l;
  l.step();
  const auto& t = l.prof.timings();
  EXPECT_NEAR(t.at("physics"), 0.003, 1e-12);
  EXPECT_NEAR(t.at("sensors/Imu"), 0.001, 1e-12);
  EXPECT_NEAR(t.at("sensors/Camera"), 0.0005, 1e-12);
  EXPECT_NEAR(t.at("sensors"), 0.0015, 1e-12);  // the sum of its classes
  EXPECT_NEAR(t.at("rendering"), 0.002, 1e-12);
  EXPECT_NEAR(t.at("step"), 0.0066, 1e-12);  // pre-step work included
  EXPECT_FALSE(t.contains("period"));        // first step: no period
  EXPECT_FALSE(t.contains("recorders"));
  EXPECT_EQ(t.size(), 6u);
  l.step();
  EXPECT_NEAR(l.prof.timings().at("period"), 0.0076, 1e-12);  // includes the caller's 1 ms
}

TEST(StepProfiler, SkippedStagesAreAbsent) {
  Loop l;
  l.step();
  l.step(0.003, /*sensors=*/false);
  const auto& t = l.prof.timings();
  EXPECT_FALSE(t.contains("sensors"));
  EXPECT_FALSE(t.contains("sensors/Imu"));
  EXPECT_FALSE(t.find("sensors").has_value());
  EXPECT_TRUE(t.contains("physics"));
  const std::string msg = error_of<std::out_of_range>([&] { (void)t.at("sensors"); });
  EXPECT_NE(msg.find("'sensors'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("physics"), std::string::npos) << msg;  // lists what is present
  EXPECT_NE(error_of<std::out_of_range>([&] { (void)t.at("nope"); }).find("never registered"),
            std::string::npos);
}

TEST(StepProfiler, ExplicitParentIsNotCountedTwice) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  {
    auto s = prof.step();
    auto sensors = prof.stage("sensors");
    mc.advance(0.0002);  // sensor bookkeeping outside any class
    {
      auto imu = prof.stage("sensors/Imu");
      mc.advance(0.001);
    }
  }
  EXPECT_NEAR(prof.timings().at("sensors"), 0.0012, 1e-12);
  EXPECT_NEAR(prof.timings().at("sensors/Imu"), 0.001, 1e-12);
}

TEST(StepProfiler, DeepNamesRollUpToEveryAncestor) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  {
    auto s = prof.step();
    auto a = prof.stage("physics/solver/iterate");
    mc.advance(0.004);
  }
  EXPECT_NEAR(prof.timings().at("physics"), 0.004, 1e-12);
  EXPECT_NEAR(prof.timings().at("physics/solver"), 0.004, 1e-12);
  EXPECT_EQ(prof.stage_parent(prof.find_stage("physics/solver")), prof.find_stage("physics"));
}

TEST(StepProfiler, RepeatedStageSumsWithinAStep) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  const auto substep = prof.stage_id("physics/substep");
  {
    auto s = prof.step();
    for (int i = 0; i < 4; ++i) {
      auto p = prof.stage(substep);
      mc.advance(0.0005);
    }
  }
  EXPECT_NEAR(prof.timings().at(substep), 0.002, 1e-12);
  EXPECT_NEAR(prof.timings().at("physics"), 0.002, 1e-12);
}

TEST(StepProfiler, TimingsWindowAveragesTheLatestStepsThatRanTheStage) {
  Loop l(quiet(3));
  l.step(0.001);
  EXPECT_NEAR(l.prof.timings().at("physics"), 0.001, 1e-12);  // mean of what there is
  l.step(0.002, false);
  l.step(0.003, false);
  EXPECT_NEAR(l.prof.timings().at("physics"), 0.002, 1e-12);
  l.step(0.006, true);
  EXPECT_NEAR(l.prof.timings().at("physics"), (0.002 + 0.003 + 0.006) / 3, 1e-12);
  // sensors ran in steps 1 and 4 only: both count, the skipped steps do not.
  EXPECT_NEAR(l.prof.timings().at("sensors"), 0.0015, 1e-12);
}

TEST(StepProfiler, IdFastPathMatchesNames) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  const auto id = prof.stage_id("physics");
  EXPECT_EQ(prof.stage_id("physics"), id);
  EXPECT_EQ(prof.find_stage("physics"), id);
  EXPECT_EQ(prof.stage_name(id), "physics");
  EXPECT_EQ(prof.find_stage("missing"), simprof::kNoStage);
  {
    auto s = prof.step();
    prof.begin_stage(id);
    mc.advance(0.001);
    prof.end_stage(id);
  }
  EXPECT_NEAR(prof.timings().at(id), 0.001, 1e-12);
  EXPECT_NEAR(prof.timings().at(simprof::kStepStage), 0.001, 1e-12);
}

TEST(StepProfiler, IterationInRegistrationOrder) {
  Loop l;
  l.step();
  l.step();
  std::vector<std::string> names;
  l.prof.timings().for_each([&](std::string_view n, double) { names.emplace_back(n); });
  const std::vector<std::string> want = {"step",        "period",         "physics",  "sensors",
                                         "sensors/Imu", "sensors/Camera", "rendering"};
  EXPECT_EQ(names, want);
  const auto m = l.prof.timings().to_map();
  EXPECT_EQ(m.size(), 7u);
  EXPECT_NEAR(m.at("rendering"), 0.002, 1e-12);
}

TEST(StepProfiler, StatsAndHistogramOverTheHistory) {
  ProfilingOptions o = quiet();
  o.stats_window = 100;
  Loop l(o);
  for (int i = 1; i <= 150; ++i) l.step(1e-6 * i);  // physics 1..150 us; the latest 100 kept
  const auto s = l.prof.stats("physics");
  EXPECT_EQ(s.count, 100u);
  EXPECT_NEAR(s.min, 51e-6, 1e-12);
  EXPECT_NEAR(s.max, 150e-6, 1e-12);
  EXPECT_NEAR(s.mean, 100.5e-6, 1e-12);
  EXPECT_NEAR(s.p50, 100.5e-6, 1e-12);
  EXPECT_NEAR(s.p99, 149.01e-6, 1e-12);
  EXPECT_EQ(l.prof.history("physics").size(), 100u);
  EXPECT_NEAR(l.prof.history("physics").back(), 150e-6, 1e-12);
  const std::string h = l.prof.histogram("physics");
  EXPECT_NE(h.find("us |"), std::string::npos) << h;
  EXPECT_THROW(l.prof.stats("nope"), std::invalid_argument);
}

// One stage vocabulary: every query also takes the StageId the hot path uses, and the name
// overloads are lookups that give the same answers.
TEST(StepProfiler, QueriesTakeTheStageIdTheHotPathUses) {
  ProfilingOptions o = quiet();
  o.stats_window = 10;
  Loop l(o);
  for (int i = 1; i <= 12; ++i) l.step(1e-6 * i);
  const StageId physics = l.prof.find_stage("physics");
  ASSERT_NE(physics, kNoStage);
  EXPECT_EQ(l.prof.stats(physics).count, 10u);
  EXPECT_EQ(l.prof.stats(physics).mean, l.prof.stats("physics").mean);
  EXPECT_EQ(l.prof.history(physics), l.prof.history("physics"));
  EXPECT_EQ(l.prof.histogram(physics), l.prof.histogram("physics"));
  EXPECT_EQ(l.prof.stats(kStepStage).count, 10u);
  EXPECT_NEAR(l.prof.stats(kStepStage).mean, l.prof.stats("step").mean, 0.0);
  const std::string bad =
      error_of<std::invalid_argument>([&] { l.prof.stats(static_cast<StageId>(999)); });
  EXPECT_NE(bad.find("StageId 999"), std::string::npos) << bad;
  EXPECT_THROW(l.prof.history(kNoStage), std::invalid_argument);
}

TEST(StepProfiler, StatsOffWhenWindowIsZero) {
  ProfilingOptions o = quiet();
  o.stats_window = 0;
  Loop l(o);
  l.step();
  EXPECT_NE(error_of<std::invalid_argument>([&] { l.prof.stats("physics"); }).find("stats_window"),
            std::string::npos);
}

TEST(StageTable, ASharesIsOfAllTheWindowsStepTime) {
  // Ten steps of 1 ms; "physics" 0.5 ms in every one, "capture" 4 ms... in two of them only (as the
  // inner stages of a replayed graph run in the capture step only).
  ManualClock mc;
  ProfilingOptions o = quiet();
  o.stats_window = 64;
  StepProfiler prof(o, 0, mc.clock());
  for (int i = 0; i < 10; ++i) {
    auto step = prof.step();
    {
      auto s = prof.stage("physics");
      mc.advance(0.0005);
    }
    if (i < 2) {
      auto s = prof.stage("capture");
      mc.advance(0.004);
    }
    mc.advance(0.0005);
  }
  const std::string table = simprof::stage_table(prof);
  auto row = [&](const std::string& name) {
    const auto at = table.find("\n" + name + " ");
    EXPECT_NE(at, std::string::npos) << table;
    return table.substr(at + 1, table.find('\n', at + 1) - at - 1);
  };
  // physics: 5 ms of the 18 ms the ten steps took; capture: 8 ms of 18 ms, never the 4 ms over a
  // 1.8 ms mean step (222 %) that a ratio of means would say.
  EXPECT_NE(row("physics").find("27.8%"), std::string::npos) << table;
  EXPECT_NE(row("capture").find("44.4%"), std::string::npos) << table;
  EXPECT_NE(row("capture").find("2*"), std::string::npos) << table;
  EXPECT_EQ(row("physics").find('*'), std::string::npos) << table;
  EXPECT_NE(table.find("* ran in fewer steps than the 10 in the window"), std::string::npos)
      << table;
}

TEST(StepProfiler, ResetStatsForgetsTheWarmUp) {
  // Three slow warm-up steps with an inner stage (as a capture), then five fast steps without it.
  ManualClock mc;
  ProfilingOptions o = quiet();
  o.stats_window = 64;
  StepProfiler prof(o, 0, mc.clock());
  for (int i = 0; i < 3; ++i) {
    auto step = prof.step();
    auto s = prof.stage("physics");
    mc.advance(0.010);
  }
  prof.reset_stats();
  EXPECT_EQ(prof.stats("step").count, 0u);
  EXPECT_EQ(prof.stats("physics").count, 0u);  // the last warm-up step's pending total too
  for (int i = 0; i < 5; ++i) {
    auto step = prof.step();
    mc.advance(0.001);
  }
  EXPECT_EQ(prof.stats("step").count, 5u);
  EXPECT_NEAR(prof.stats("step").mean, 0.001, 1e-12);
  EXPECT_EQ(prof.stats("physics").count, 0u);
  EXPECT_DOUBLE_EQ(prof.timings().at("step"), 0.001);  // timings() is not the statistics
  const std::string table = simprof::stage_table(prof);
  EXPECT_EQ(table.find("physics"), std::string::npos) << table;
}
