// SPDX-License-Identifier: MIT
// Engines that time themselves (issue 25): durations an engine measured, handed over with
// StepProfiler::record(), and an engine's zone hooks through EngineZones, on the loop's thread and
// on worker threads. Every time comes from a ManualClock.
#include <gtest/gtest.h>

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine_time_util.hpp"
#include "simprof/base/manual_clock.hpp"
#include "simprof/detail/thread_id.hpp"
#include "simprof/profiler/engine_zones.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/trace/chrome_json.hpp"
#include "simprof/trace/session.hpp"
#include "test_util.hpp"

using namespace simprof;
using simprof::testing::error_of;
using simprof::testing::quiet;
using simprof::testing::SimprofLog;

using simprof::testing::named;
using simprof::testing::step_with_zone;
using simprof::testing::Traced;
using simprof::testing::with_stats;

// --- StepProfiler::record() -----------------------------------------------------------------

TEST(EngineTime, RecordedTimesAreTimingsAndRollUp) {
  ManualClock mc;
  StepProfiler prof(with_stats(), 0, mc.clock());
  const StageId collision = prof.stage_id("physics/collision");
  for (int i = 0; i < 3; ++i) {
    auto step = prof.step();
    mc.advance_ns(10'000);
    prof.record(collision, 125e-6);
    prof.record("physics/solver", 250e-6 * (i + 1));
    prof.record(collision, 5e-6);  // twice in a step: the sum, as a scope run twice
  }
  const auto& t = prof.timings();
  EXPECT_DOUBLE_EQ(t.at("physics/collision"), 130e-6);
  EXPECT_DOUBLE_EQ(t.at("physics/solver"), 750e-6);
  EXPECT_DOUBLE_EQ(t.at("physics"), 880e-6);  // rolled up, as "a/b" scopes are into "a"
  EXPECT_DOUBLE_EQ(t.at("step"), 10e-6);      // the step's own wall time is the clock's
  const LatencyStats s = prof.stats("physics/solver");
  EXPECT_EQ(s.count, 3u);
  EXPECT_DOUBLE_EQ(s.min, 250e-6);
  EXPECT_DOUBLE_EQ(s.max, 750e-6);
  EXPECT_EQ(prof.history("physics").size(), 3u);
}

TEST(EngineTime, RecordInsideAnOpenParentCountsOnlyAsAChild) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  {
    auto step = prof.step();
    auto physics = prof.stage("physics");
    mc.advance_ns(1'000);
    prof.record("physics/collision", 400e-9);
  }
  // "physics" is its scope's 1 us: the recorded child is inside it, not added again.
  EXPECT_DOUBLE_EQ(prof.timings().at("physics"), 1e-6);
  EXPECT_DOUBLE_EQ(prof.timings().at("physics/collision"), 400e-9);
}

TEST(EngineTime, MisuseThrowsNamingTheValueAndLeavesTheProfilerUsable) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  const StageId c = prof.stage_id("physics/collision");

  const std::string outside = error_of<std::logic_error>([&] { prof.record(c, 1e-3); });
  EXPECT_NE(outside.find("'physics/collision'"), std::string::npos) << outside;
  EXPECT_NE(outside.find("outside a step"), std::string::npos) << outside;

  {
    auto step = prof.step();
    const std::string nan = error_of<std::invalid_argument>(
        [&] { prof.record(c, std::numeric_limits<double>::quiet_NaN()); });
    EXPECT_NE(nan.find("nan"), std::string::npos) << nan;
    EXPECT_NE(nan.find("'physics/collision'"), std::string::npos) << nan;
    const std::string neg = error_of<std::invalid_argument>([&] { prof.record(c, -2e-3); });
    EXPECT_NE(neg.find("-0.002"), std::string::npos) << neg;
    EXPECT_NE(neg.find(">= 0"), std::string::npos) << neg;
    EXPECT_FALSE(error_of<std::invalid_argument>([&] { prof.record(c, HUGE_VAL); }).empty());
    EXPECT_FALSE(error_of<std::invalid_argument>([&] { prof.record(c, 1e300); }).empty());
    EXPECT_FALSE(error_of<std::invalid_argument>([&] { prof.record(StageId{999}, 1.0); }).empty());
    EXPECT_FALSE(error_of<std::invalid_argument>([&] { prof.record(kStepStage, 1.0); }).empty());
    {
      auto s = prof.stage(c);
      const std::string open = error_of<std::logic_error>([&] { prof.record(c, 1e-3); });
      EXPECT_NE(open.find("is open"), std::string::npos) << open;
    }
    prof.record(c, 2e-6);  // still usable inside the same step
    mc.advance_ns(3'000);
  }
  ASSERT_EQ(prof.steps(), 1u);
  EXPECT_DOUBLE_EQ(prof.timings().at("physics/collision"), 2e-6);  // the scope's 0 + 2 us
  {
    auto step = prof.step();
    prof.record(c, 7e-6);
  }
  EXPECT_DOUBLE_EQ(prof.timings().at("physics/collision"), 7e-6);
}

TEST(EngineTime, StageClockIsNamedOnce) {
  StepProfiler prof(quiet());
  const StageId c = prof.stage_id("physics/collision");
  EXPECT_EQ(prof.stage_clock(c), "");
  prof.set_stage_clock(c, "mjcb_time");
  EXPECT_EQ(prof.stage_clock(c), "mjcb_time");
  EXPECT_EQ(prof.stage_clock(StageId{999}), "");
  EXPECT_NE(error_of<std::invalid_argument>([&] { prof.set_stage_clock(c, ""); }).find("empty"),
            std::string::npos);
  EXPECT_FALSE(
      error_of<std::invalid_argument>([&] { prof.set_stage_clock(StageId{999}, "x"); }).empty());
}

TEST(EngineTime, TracePlacesRecordedSpansInsideTheirParentInOrder) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  prof.set_stage_clock(prof.stage_id("physics/collision"), "mjcb_time");
  Traced tr(prof);
  {
    auto step = prof.step();  // at 0
    mc.advance_ns(1'000);
    {
      auto physics = prof.stage("physics");  // 1000 .. 11000
      mc.advance_ns(10'000);
      prof.record("physics/collision", 3e-6);
      prof.record("physics/solver", 4e-6);
      prof.record("physics/late", 9e-6);  // would pass now (11000): clamped there
    }
    mc.advance_ns(1'000);
    prof.record("render", 500e-9);  // at the step's level: after "physics" ended (11000)
    mc.advance_ns(1'000);
  }
  ASSERT_EQ(tr.traces.size(), 1u);
  const Span* physics = tr.find("physics");
  const Span* collision = tr.find("physics/collision");
  const Span* solver = tr.find("physics/solver");
  const Span* late = tr.find("physics/late");
  const Span* render = tr.find("render");
  ASSERT_TRUE(physics && collision && solver && late && render);
  EXPECT_EQ(collision->begin_ns, 1'000);  // the parent's begin
  EXPECT_EQ(collision->end_ns, 4'000);
  EXPECT_EQ(solver->begin_ns, 4'000);  // after the previous one
  EXPECT_EQ(solver->end_ns, 8'000);
  EXPECT_EQ(late->begin_ns, 8'000);
  EXPECT_EQ(late->end_ns, 11'000);  // clamped: never past the moment it was recorded
  EXPECT_LE(late->end_ns, physics->end_ns);
  EXPECT_EQ(render->begin_ns, 11'000);
  EXPECT_EQ(render->end_ns, 11'500);
  EXPECT_EQ(collision->tid, physics->tid);  // the loop's track
  EXPECT_EQ(collision->get<StagePayload>().clock, "mjcb_time");
  EXPECT_EQ(solver->get<StagePayload>().clock, "engine");
  EXPECT_EQ(physics->get<StagePayload>().clock, "");
  // The timings keep the engine's value; only the trace's placement is clamped.
  EXPECT_DOUBLE_EQ(prof.timings().at("physics/late"), 9e-6);
  const std::string json = to_chrome_json(tr.traces[0]);
  EXPECT_NE(json.find("\"clock\": \"mjcb_time\""), std::string::npos);
  EXPECT_NE(json.find("\"clock\": \"engine\""), std::string::npos);
}

// --- EngineZones on the loop's thread ---------------------------------------------------------

TEST(EngineZones, NestedZonesAreSubStagesMappedOnce) {
  ManualClock mc;
  StepProfiler prof(with_stats(), 0, mc.clock());
  EngineZones zones(prof, "physics");
  static const char* const kStep = "stepSimulation";
  static const char* const kCollide = "performDiscreteCollisionDetection";
  std::size_t stages_after_first = 0;
  for (int i = 0; i < 3; ++i) {
    auto step = prof.step();
    zones.enter(kStep);
    mc.advance_ns(1'000);
    zones.enter(kCollide);
    mc.advance_ns(2'000);
    zones.leave();
    zones.enter(kCollide);  // twice in a step: summed
    mc.advance_ns(500);
    zones.leave();
    zones.leave();
    if (i == 0) stages_after_first = prof.num_stages();
  }
  EXPECT_EQ(prof.num_stages(), stages_after_first);  // the same pointers: no new stage
  const auto& t = prof.timings();
  EXPECT_DOUBLE_EQ(t.at("physics/stepSimulation/performDiscreteCollisionDetection"), 2.5e-6);
  EXPECT_DOUBLE_EQ(t.at("physics/stepSimulation"), 3.5e-6);
  EXPECT_DOUBLE_EQ(t.at("physics"), 3.5e-6);
  EXPECT_EQ(prof.stats("physics/stepSimulation").count, 3u);
  EXPECT_FALSE(zones.worker_cpu_seconds("physics/stepSimulation"));  // none on workers
}

TEST(EngineZones, OpenZoneAtStepEndIsClosedThereAndSaidOnce) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  EngineZones zones(prof);
  SimprofLog log;
  for (int i = 0; i < 2; ++i) {
    {
      auto step = prof.step();
      zones.enter("stepSimulation");
      mc.advance_ns(1'000);
    }                                                            // the step ends with the zone open
    EXPECT_EQ(prof.steps(), static_cast<std::uint64_t>(i + 1));  // and still ends
    EXPECT_DOUBLE_EQ(prof.timings().at("physics/stepSimulation"), 1e-6);
    zones.leave();  // the engine's own leave(), later: pairs with it silently
  }
  EXPECT_EQ(log.count("still open at the end of step"), 1) << log.str();
  EXPECT_EQ(log.count("stepSimulation"), 1) << log.str();
  // The manual API ends the same way.
  prof.begin_step();
  zones.enter("stepSimulation");
  EXPECT_TRUE(prof.end_step());
  zones.leave();
  step_with_zone(prof, zones, mc, "stepSimulation", 2'000);
  EXPECT_DOUBLE_EQ(prof.timings().at("physics/stepSimulation"), 2e-6);
}

TEST(EngineZones, StrayLeaveIsSaidOnceAndDoesNothing) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  EngineZones zones(prof);
  SimprofLog log;
  {
    auto step = prof.step();
    auto s = prof.stage("physics");
    zones.leave();
    zones.leave();
    mc.advance_ns(1'000);
  }
  EXPECT_EQ(prof.steps(), 1u);  // the user's scope was not ended by it
  EXPECT_DOUBLE_EQ(prof.timings().at("physics"), 1e-6);
  EXPECT_EQ(log.count("leave() with no zone open"), 1) << log.str();
}

TEST(EngineZones, ZonesOutsideAStepCountNothingAndStillPair) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  EngineZones zones(prof);
  SimprofLog log;
  zones.enter("init");  // before any step: nothing to count into
  zones.leave();
  step_with_zone(prof, zones, mc, "stepSimulation", 1'000);
  EXPECT_FALSE(prof.timings().contains("physics/init"));
  EXPECT_DOUBLE_EQ(prof.timings().at("physics/stepSimulation"), 1e-6);
  EXPECT_EQ(log.str(), "");
}

TEST(EngineZones, TopLevelZonesAndABadUnder) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  EXPECT_NE(
      error_of<std::invalid_argument>([&] { EngineZones z(prof, "/physics"); }).find("'/physics'"),
      std::string::npos);
  EngineZones zones(prof, "");
  step_with_zone(prof, zones, mc, "bullet", 1'000);
  EXPECT_DOUBLE_EQ(prof.timings().at("bullet"), 1e-6);
}

TEST(EngineZones, TraceNestsLoopZones) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  EngineZones zones(prof);
  Traced tr(prof);
  {
    auto step = prof.step();
    zones.enter("stepSimulation");
    mc.advance_ns(1'000);
    zones.enter("solve");
    mc.advance_ns(2'000);
    zones.leave();
    zones.leave();
  }
  ASSERT_EQ(tr.traces.size(), 1u);
  const Span* outer = tr.find("physics/stepSimulation");
  const Span* inner = tr.find("physics/stepSimulation/solve");
  ASSERT_TRUE(outer && inner);
  EXPECT_EQ(outer->begin_ns, 0);
  EXPECT_EQ(outer->end_ns, 3'000);
  EXPECT_EQ(inner->begin_ns, 1'000);
  EXPECT_EQ(inner->end_ns, 3'000);
  EXPECT_EQ(inner->tid, outer->tid);
}

// --- EngineZones that go while worker threads live on ---------------------------------------

TEST(EngineZones, AZoneLeftOpenInAGoneEngineZonesIsForgotten) {
  StepProfiler prof(quiet(), 0);
  std::optional<EngineZones> zones(std::in_place, prof);
  std::mutex m;
  std::condition_variable cv;
  int stage = 0;
  auto wait_for = [&](int s) {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return stage == s; });
  };
  auto go = [&](int s) {
    std::lock_guard<std::mutex> lock(m);
    stage = s;
    cv.notify_all();
  };
  std::thread worker([&] {
    zones->enter("stepSimulation");  // never left
    go(1);
    wait_for(2);
    zones->enter("solve");
    zones->leave();
    go(3);
  });
  wait_for(1);
  zones.reset();
  zones.emplace(prof);
  {
    auto step = prof.step();
    go(2);
    wait_for(3);
  }
  worker.join();
  EXPECT_TRUE(zones->worker_cpu_seconds("physics/solve")) << "a top-level zone of the new one";
  EXPECT_FALSE(zones->worker_cpu_seconds("physics/stepSimulation/solve"));
}

// A thread that outlives an EngineZones (a pool kept across runs) gives its zones to the next
// one, not to the first one's queue.
TEST(EngineZones, APoolThreadServesTheNextEngineZonesAfterTheFirstIsGone) {
  StepProfiler prof(quiet(), 0);
  std::optional<EngineZones> zones;
  std::mutex m;
  std::condition_variable cv;
  int round = 0, done = 0;
  std::thread worker([&] {
    for (int r = 1; r <= 2; ++r) {
      std::unique_lock<std::mutex> lock(m);
      cv.wait(lock, [&] { return round == r; });
      zones->enter("stepSimulation");
      zones->leave();
      done = r;
      cv.notify_all();
    }
  });
  for (int r = 1; r <= 2; ++r) {
    zones.emplace(prof);
    Traced tr(prof);
    {
      auto step = prof.step();
      std::unique_lock<std::mutex> lock(m);
      round = r;
      cv.notify_all();
      cv.wait(lock, [&] { return done == r; });
    }
    ASSERT_EQ(tr.traces.size(), 1u) << "round " << r;
    EXPECT_EQ(named(tr.traces[0], "physics/stepSimulation").size(), 1u) << "round " << r;
    ASSERT_TRUE(zones->worker_cpu_seconds("physics/stepSimulation")) << "round " << r;
    zones.reset();
  }
  worker.join();
}

TEST(ThreadId, IsTheThreadsOwnAndAskedAgainAfterAFork) {
  const std::int64_t mine = detail::os_thread_id();
  EXPECT_EQ(mine, static_cast<std::int64_t>(::syscall(SYS_gettid)));
  EXPECT_EQ(detail::os_thread_id(), mine) << "the same thread, the same id";
  std::int64_t other = 0;
  std::thread([&] { other = detail::os_thread_id(); }).join();
  EXPECT_NE(other, mine);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0)  // the forked thread's cached id is its parent's: it must ask again
    ::_exit(detail::os_thread_id() == static_cast<std::int64_t>(::syscall(SYS_gettid)) ? 0 : 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child read its parent's thread id";
}
