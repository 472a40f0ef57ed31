// SPDX-License-Identifier: MIT
// The step profiler's steps: what a step scope records and when, vetoes, misuse, listeners and the
// options it follows. What its stages measure: test_step_profiler_stages.cpp.
#include <gtest/gtest.h>

#include <functional>

#include "step_loop.hpp"
#include "test_util.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "simprof/base/manual_clock.hpp"
#include "simprof/profiler/step_profiler.hpp"

using simprof::ManualClock;
using simprof::ProfilingOptions;
using simprof::StepProfiler;
using simprof::testing::error_of;
using simprof::testing::steps::Loop;
using simprof::testing::steps::quiet;

TEST(StepProfiler, EmptyUntilTheFirstStepEnds) {
  Loop l;
  EXPECT_TRUE(l.prof.timings().empty());
  {
    auto s = l.prof.step();
    auto p = l.prof.stage("physics");
    l.mc.advance(0.001);
    EXPECT_TRUE(l.prof.timings().empty());
  }
  EXPECT_FALSE(l.prof.timings().empty());
}

TEST(StepProfiler, VetoClearsTheMapAndTheNextStepHasNoPeriod) {
  Loop l;
  bool paused = false;
  l.prof.add_pre_step_callback([&] { return !paused; });
  l.step();
  l.step();
  EXPECT_TRUE(l.prof.timings().contains("period"));
  paused = true;
  {
    auto s = l.prof.step();
    EXPECT_FALSE(s);
    EXPECT_TRUE(s.vetoed());
  }
  EXPECT_TRUE(l.prof.timings().empty());
  EXPECT_EQ(l.prof.steps(), 2u);
  paused = false;
  l.step();
  EXPECT_FALSE(l.prof.timings().contains("period"));
  EXPECT_TRUE(l.prof.timings().contains("physics"));
  l.step();
  EXPECT_TRUE(l.prof.timings().contains("period"));
  EXPECT_EQ(l.prof.steps(), 4u);
}

TEST(StepProfiler, VetoFromInsideTheStep) {
  Loop l;
  l.step();
  {
    auto s = l.prof.step();
    s.veto();
  }
  EXPECT_TRUE(l.prof.timings().empty());
  l.step();
  EXPECT_FALSE(l.prof.timings().contains("period"));
}

TEST(StepProfiler, VetoedStepsAreNotCountedByTheFpsTracker) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  bool paused = false;
  prof.add_pre_step_callback([&] { return !paused; });
  auto run = [&](int n) {
    for (int i = 0; i < n; ++i) {
      auto s = prof.step();
      mc.advance(0.010);
    }
  };
  run(4);  // 30 ms into the first sample
  paused = true;
  run(100);  // a second of pause
  paused = false;
  run(6);  // the clock restarts: 5 counted steps in 50 ms
  EXPECT_EQ(prof.fps().num_samples(), 1u);
  EXPECT_DOUBLE_EQ(prof.fps().fps_per_env(), 100.0);
}

TEST(StepProfiler, MisuseIsAClearError) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  const auto physics = prof.stage_id("physics");
  EXPECT_NE(
      error_of<std::logic_error>([&] { auto s = prof.stage(physics); }).find("outside a step"),
      std::string::npos);
  EXPECT_NE(error_of<std::invalid_argument>([&] { (void)prof.stage_id(""); }).find("empty"),
            std::string::npos);
  EXPECT_NE(error_of<std::invalid_argument>([&] { (void)prof.stage_id("step"); }).find("reserved"),
            std::string::npos);
  EXPECT_NE(error_of<std::invalid_argument>([&] { (void)prof.stage_id("a//b"); }).find("'a//b'"),
            std::string::npos);
  EXPECT_NE(error_of<std::invalid_argument>([&] { (void)prof.stage_id("/a"); }).find("'/a'"),
            std::string::npos);
  EXPECT_NE(error_of<std::logic_error>([&] { prof.end_step(); }).find("outside a step"),
            std::string::npos);
  EXPECT_THROW(prof.veto_step(), std::logic_error);

  prof.begin_step();
  EXPECT_NE(error_of<std::logic_error>([&] { prof.begin_step(); }).find("step inside a step"),
            std::string::npos);
  EXPECT_NE(error_of<std::invalid_argument>([&] { prof.begin_stage(12345); }).find("12345"),
            std::string::npos);
  EXPECT_THROW(prof.begin_stage(simprof::kStepStage), std::invalid_argument);
  const auto render = prof.stage_id("rendering");
  prof.begin_stage(physics);
  EXPECT_NE(error_of<std::logic_error>([&] { prof.begin_stage(physics); }).find("already open"),
            std::string::npos);
  prof.begin_stage(render);
  const std::string unbalanced = error_of<std::logic_error>([&] { prof.end_stage(physics); });
  EXPECT_NE(unbalanced.find("unbalanced"), std::string::npos) << unbalanced;
  EXPECT_NE(unbalanced.find("'rendering'"), std::string::npos) << unbalanced;
  const std::string open = error_of<std::logic_error>([&] { prof.end_step(); });
  EXPECT_NE(open.find("'rendering' is still open"), std::string::npos) << open;
  EXPECT_NE(open.find("dropped"), std::string::npos) << open;
  // The failed step is dropped like a vetoed one: nothing published, and the profiler stays usable
  // (a notebook user who caught the error goes on with the same profiler).
  EXPECT_FALSE(prof.in_step());
  EXPECT_TRUE(prof.timings().empty());
  EXPECT_NE(error_of<std::logic_error>([&] { prof.end_stage(render); }).find("no open stage"),
            std::string::npos);
  prof.begin_step();
  prof.begin_stage(physics);
  mc.advance(0.002);
  prof.end_stage(physics);
  EXPECT_NE(error_of<std::logic_error>([&] { prof.end_stage(physics); }).find("no open stage"),
            std::string::npos);
  EXPECT_TRUE(prof.end_step());
  EXPECT_NEAR(prof.timings().at("physics"), 0.002, 1e-12);
  EXPECT_FALSE(prof.timings().contains("period")) << "the step after a dropped one has no period";
}

TEST(StepProfiler, StageLeftOpenInAStepScopeIsReportedAndTheStepDropped) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  std::vector<std::string> errors;
  prof.set_error_handler([&](const std::string& m) { errors.push_back(m); });
  {
    auto s = prof.step();
    prof.begin_stage(prof.stage_id("physics"));
  }
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("'physics' is still open"), std::string::npos) << errors[0];
  EXPECT_TRUE(prof.timings().empty());
  EXPECT_FALSE(prof.in_step());
}

TEST(StepProfiler, ExceptionInAStepAbortsIt) {
  Loop l;
  l.step();
  l.step();
  EXPECT_THROW(
      {
        auto s = l.prof.step();
        auto p = l.prof.stage("physics");
        throw std::runtime_error("solver diverged");
      },
      std::runtime_error);
  EXPECT_FALSE(l.prof.in_step());
  EXPECT_TRUE(l.prof.timings().empty());
  l.step();
  EXPECT_FALSE(l.prof.timings().contains("period"));
  EXPECT_TRUE(l.prof.timings().contains("physics"));
}

// A step is aborted only by an exception thrown inside it: a step run whole inside a destructor
// that an exception's unwinding runs ends normally, and one inside it that throws is aborted.
TEST(StepProfiler, OnlyAnExceptionThrownInsideAStepAbortsIt) {
  struct Outcomes : simprof::StepListener {
    std::vector<simprof::StepOutcome> seen;
    void on_step_end(std::uint64_t, std::int64_t, simprof::StepOutcome o) override {
      seen.push_back(o);
    }
  };
  Loop l;
  Outcomes outcomes;
  auto outcomes_attached = l.prof.attach(outcomes);
  struct StepsWhileUnwinding {
    StepProfiler& prof;
    ~StepsWhileUnwinding() {
      { auto s = prof.step(); }  // no exception of its own: completed
      try {
        auto s = prof.step();
        throw std::logic_error("second");  // thrown inside this step: aborted
      } catch (const std::logic_error&) {
      }
    }
  };
  try {
    StepsWhileUnwinding steps{l.prof};
    throw std::runtime_error("first");
  } catch (const std::runtime_error&) {
  }
  outcomes_attached.detach();
  using simprof::StepOutcome;
  EXPECT_EQ(outcomes.seen,
            (std::vector<StepOutcome>{StepOutcome::kCompleted, StepOutcome::kAborted}));
}

// A listener's attachment and its profiler may go in either order: the attachment's end detaches
// the listener, and a profiler that goes first leaves the attachment empty (its end touches
// nothing).
TEST(StepProfiler, AttachmentsDetachWhicheverSideGoesFirst) {
  struct Counter : simprof::StepListener {
    int steps = 0;
    void on_step_end(std::uint64_t, std::int64_t, simprof::StepOutcome) override { ++steps; }
  };
  Counter counter;
  simprof::ListenerAttachment outlives;
  {
    ManualClock mc;
    StepProfiler prof(quiet(), 0, mc.clock());
    {
      auto attached = prof.attach(counter);
      { auto s = prof.step(); }
      EXPECT_EQ(prof.listeners().size(), 1u);
    }
    EXPECT_TRUE(prof.listeners().empty()) << "the attachment's end detaches";
    { auto s = prof.step(); }
    EXPECT_EQ(counter.steps, 1);
    outlives = prof.attach(counter);
    simprof::ListenerAttachment moved = std::move(outlives);
    EXPECT_FALSE(outlives);
    outlives = std::move(moved);
    EXPECT_TRUE(outlives);
    EXPECT_EQ(prof.listeners().size(), 1u);
    { auto s = prof.step(); }
    EXPECT_EQ(counter.steps, 2);
    auto s = prof.step();
    EXPECT_THROW((void)prof.attach(counter), std::logic_error) << "attached inside a step";
  }
  EXPECT_FALSE(outlives) << "the profiler went first";
  outlives.detach();
}

TEST(StepProfiler, AListenerDetachedByACallbackIsNotCalledAgainAndTheWalkGoesOn) {
  struct Counter : simprof::StepListener {
    int begins = 0, ends = 0;
    std::function<void()> on_end;
    void on_stage_begin(simprof::StageId, std::int64_t) override { ++begins; }
    void on_step_end(std::uint64_t, std::int64_t, simprof::StepOutcome) override {
      ++ends;
      if (on_end) on_end();
    }
  };
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  Counter first, second, third;
  auto a1 = prof.attach(first);
  auto a2 = prof.attach(second);
  auto a3 = prof.attach(third);
  // The first listener's step end detaches the second (an owner destroying its tool) and itself.
  first.on_end = [&] {
    a2.detach();
    a1.detach();
  };
  {
    auto s = prof.step();
    auto st = prof.stage("physics");
  }
  EXPECT_EQ(first.ends, 1);
  EXPECT_EQ(second.ends, 0) << "detached before its turn in the same walk";
  EXPECT_EQ(third.ends, 1) << "the walk went on past the detached ones";
  EXPECT_EQ(prof.listeners().size(), 1u) << "the detached ones are gone once the walk ended";
  {
    auto s = prof.step();
    auto st = prof.stage("physics");
  }
  EXPECT_EQ(first.begins, 1);
  EXPECT_EQ(second.begins, 1);
  EXPECT_EQ(third.begins, 2);
  EXPECT_EQ(third.ends, 2);
}
TEST(StepProfiler, ListenersSeeEveryEvent) {
  struct Recorder : simprof::StepListener {
    std::vector<std::string> events;
    const StepProfiler* prof = nullptr;
    void on_step_begin(std::uint64_t step, std::int64_t) override {
      events.push_back(std::string("step ").append(std::to_string(step)));
    }
    void on_stage_begin(simprof::StageId id, std::int64_t) override {
      events.push_back(std::string("+").append(prof->stage_name(id)));
    }
    void on_stage_end(simprof::StageId id, std::int64_t) override {
      events.push_back(std::string("-").append(prof->stage_name(id)));
    }
    void on_step_end(std::uint64_t, std::int64_t, simprof::StepOutcome o) override {
      events.push_back(o == simprof::StepOutcome::kCompleted ? "end" : "dropped");
    }
  } rec;
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  rec.prof = &prof;
  auto rec_attached = prof.attach(rec);
  {
    auto s = prof.step();
    auto p = prof.stage("physics");
  }
  {
    auto s = prof.step();
    s.veto();
  }
  rec_attached.detach();
  { auto s = prof.step(); }
  const std::vector<std::string> want = {"step 0", "+physics", "-physics",
                                         "end",    "step 1",   "dropped"};
  EXPECT_EQ(rec.events, want);
}

// One scope per concept: the optional flavour takes a pointer and does nothing when it is null;
// with a profiler it is the same scope as the reference flavour.
TEST(StepProfiler, OptionalScopesDoNothingWithoutAProfiler) {
  Loop l;
  StepProfiler* none = nullptr;
  {
    simprof::OptionalStepScope step(none);
    EXPECT_TRUE(step);
    step.veto();  // nothing to veto
    EXPECT_FALSE(step.vetoed());
    simprof::OptionalStageScope s(none, simprof::StageId{5});
  }
  const simprof::StageId physics = l.prof.stage_id("physics");
  {
    simprof::OptionalStepScope step(&l.prof);
    EXPECT_TRUE(step);
    {
      simprof::OptionalStageScope s(&l.prof, physics);
      l.mc.advance(0.002);
    }
    step.veto();
    EXPECT_TRUE(step.vetoed());
  }
  EXPECT_TRUE(l.prof.timings().empty()) << "the vetoed step published nothing";
  {
    simprof::StepScope step(l.prof);
    simprof::StageScope s(l.prof, physics);
    l.mc.advance(0.003);
  }
  EXPECT_NEAR(l.prof.timings().at("physics"), 0.003, 1e-12);
}

TEST(StepProfiler, RejectsBadConstruction) {
  ProfilingOptions o;
  o.fps_tracker_alpha = 2.0;
  EXPECT_THROW(StepProfiler(o, 0), std::invalid_argument);
  EXPECT_THROW(StepProfiler(ProfilingOptions{}, -5), std::invalid_argument);
}

TEST(StepProfiler, RealClockSmoke) {
  // No wall-clock value is asserted: the profiler's readings on a real clock must fall inside the
  // interval the test reads on the same clock around them (seconds, not ticks), and the map holds
  // exactly the keys a step with one stage has.
  ProfilingOptions o = quiet();
  StepProfiler prof(o, 0);
  const simprof::Clock clock = prof.clock();
  std::int64_t begin = 0, end = 0;
  for (int i = 0; i < 3; ++i) {
    begin = clock.now();
    {
      auto s = prof.step();
      auto p = prof.stage("physics");
    }
    end = clock.now();
  }
  const double around = static_cast<double>(end - begin) / clock.ticks_per_second();
  const auto& t = prof.timings();
  EXPECT_EQ(t.size(), 3u);  // physics, step, period
  EXPECT_LE(t.at("physics"), t.at("step"));
  EXPECT_LE(t.at("step"), around) << "a step measured longer than the interval around it";
}

TEST(StepProfiler, OptionsFollowTheFpsSwitch) {
  ManualClock mc;
  ProfilingOptions o = quiet();
  o.show_fps = true;
  StepProfiler prof(o, 0, mc.clock());
  EXPECT_TRUE(prof.options().show_fps);
  prof.set_show_fps(false);
  EXPECT_FALSE(prof.options().show_fps);
  EXPECT_FALSE(prof.fps().show());
  prof.set_show_fps(true);
  EXPECT_TRUE(prof.options().show_fps);
  EXPECT_EQ(prof.options().timings_window, o.timings_window);  // the rest as given
}
