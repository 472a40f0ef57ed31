// SPDX-License-Identifier: MIT
// The stamping timers' host arithmetic, without a GPU: a step's stage stamps to stage times
// (StageWalk), a replay's node stamps to node times (ReplayStamps), device time onto the timebase
// (ClockMap). The GPU tests check the same against CUDA events; these pin the rules on any machine.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <thread>
#include <vector>

#include "event_cost.hpp"
#include "node_stamps.hpp"
#include "said_once.hpp"
#include "sample_stats.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/profiler/timings.hpp"
#include "stage_walk.hpp"
#include "test_util.hpp"

namespace {

using simprof::StageId;
using simprof::StepProfiler;
using simprof::TimingsSnapshot;
using simprof::cuda::detail::ClockMap;
using simprof::cuda::detail::ClockPoint;
using simprof::cuda::detail::GraphShape;
using simprof::cuda::detail::kHopSlot;
using simprof::cuda::detail::kNoSlot;
using simprof::cuda::detail::kStageBegin;
using simprof::cuda::detail::kStageEnd;
using simprof::cuda::detail::MergedMark;
using simprof::cuda::detail::ReplayStamps;
using simprof::cuda::detail::RunningStat;
using simprof::cuda::detail::SaidOnce;
using simprof::cuda::detail::SampleSchedule;
using simprof::cuda::detail::SlotRanges;
using simprof::cuda::detail::StageMark;
using simprof::cuda::detail::StageWalk;
using simprof::cuda::detail::StampEntry;
using simprof::cuda::detail::start_slots;
using simprof::cuda::detail::StepStamps;
using simprof::cuda::detail::TimerVoice;

// A profiler with physics, physics/contacts, sensors and sensors/Imu; one step's stamps, added
// in the order the tests say, and the walk's output over them.
struct Walk : ::testing::Test {
  StepProfiler prof;
  StageId physics = prof.stage_id("physics");
  StageId contacts = prof.stage_id("physics/contacts");
  StageId imu = prof.stage_id("sensors/Imu");
  StageId sensors = prof.find_stage("sensors");
  TimingsSnapshot out{prof};
  StageWalk walk{64};
  std::vector<StampEntry> graph;
  std::vector<unsigned long long> eager;
  std::vector<StageMark> marks;
  std::vector<MergedMark> merged;

  // A replayed graph's stamp, an eager stamp, a boundary merged into eager stamp `source` (from 1).
  void graph_at(unsigned long long t, StageId id, int kind) {
    graph.push_back(StampEntry{static_cast<std::int32_t>(id), kind, t});
  }
  void eager_at(unsigned long long t, StageId id, int kind) {
    eager.push_back(t);
    marks.push_back(StageMark{static_cast<int>(id), kind});
  }
  void merge(unsigned source, StageId id, int kind) {
    merged.push_back(MergedMark{source, static_cast<int>(id), kind});
  }
  // The walk over the stamps added, an eager stamp costing `eager_ns`; then a fresh step.
  void run(double eager_ns = 0) {
    StepStamps s;
    s.graph = graph.data();
    s.n_graph = static_cast<unsigned>(graph.size());
    s.eager = eager.data();
    s.marks = marks.data();
    s.n_eager = static_cast<unsigned>(eager.size());
    s.merged = merged.data();
    s.n_merged = static_cast<unsigned>(merged.size());
    s.eager_ns = eager_ns;
    out.reset(0, prof.num_stages());
    walk.walk(s, prof, out);
    graph.clear();
    eager.clear();
    marks.clear();
    merged.clear();
  }
  // Expects stage `id` timed at `want` ns.
  void expect_ns(StageId id, double want) const {
    const auto v = out.find(id);
    ASSERT_TRUE(v.has_value()) << "stage " << id << " has no time";
    EXPECT_NEAR(*v * 1e9, want, 1e-6) << "stage " << id;
  }
  bool timed(StageId id) const { return out.find(id).has_value(); }
};

TEST_F(Walk, GraphStampsInAnyOrderPairInTimeOrder) {
  // As a replayed graph's leaves land: reserved out of time order.
  graph_at(700, contacts, kStageEnd);
  graph_at(900, physics, kStageEnd);
  graph_at(100, physics, kStageBegin);
  graph_at(300, contacts, kStageBegin);
  run();
  expect_ns(physics, 800.0);  // the child is inside its open parent: not added again
  expect_ns(contacts, 400.0);
  EXPECT_FALSE(timed(imu));
  EXPECT_TRUE(walk.unpaired().empty());
}

TEST_F(Walk, AChildCountsIntoAParentThatIsNotOpen) {
  graph_at(1000, imu, kStageBegin);
  graph_at(1250, imu, kStageEnd);
  run();
  expect_ns(imu, 250.0);
  expect_ns(sensors, 250.0);  // as on the host: "sensors" holds its classes
}

TEST_F(Walk, AChildCountsUpToTheFirstOpenAncestor) {
  const StageId z = prof.stage_id("x/y/z");
  const StageId y = prof.find_stage("x/y"), x = prof.find_stage("x");
  // x is stamped around z; x/y is not stamped: z counts into y, not again into x.
  graph_at(100, x, kStageBegin);
  graph_at(200, z, kStageBegin);
  graph_at(500, z, kStageEnd);
  graph_at(900, x, kStageEnd);
  run();
  expect_ns(z, 300.0);
  expect_ns(y, 300.0);
  expect_ns(x, 800.0);
}

TEST_F(Walk, EagerStampsInsideAStageAreTakenOut) {
  // physics [e0 = 1000, e3 = 2000) holds e0, e1, e2; contacts [e1, e2) holds e1.
  eager_at(1000, physics, kStageBegin);
  eager_at(1200, contacts, kStageBegin);
  eager_at(1500, contacts, kStageEnd);
  eager_at(2000, physics, kStageEnd);
  run(100);
  expect_ns(physics, 1000.0 - 3 * 100.0);
  expect_ns(contacts, 300.0 - 100.0);
}

TEST_F(Walk, AMergedBoundaryIsItsStampsInstantAfterIt) {
  // physics begins at e0 (1000); contacts' begin took e0's instant; contacts ends at e1 (1500) and
  // physics' end took e1's instant. Each stage holds one stamp: e0.
  eager_at(1000, physics, kStageBegin);
  eager_at(1500, contacts, kStageEnd);
  merge(1, contacts, kStageBegin);
  merge(2, physics, kStageEnd);
  run(100);
  expect_ns(contacts, 500.0 - 100.0);
  expect_ns(physics, 500.0 - 100.0);
  EXPECT_TRUE(walk.unpaired().empty());
}

TEST_F(Walk, AMergedBoundaryWhoseStampWasNotPublishedIsLeftOut) {
  eager_at(1000, physics, kStageBegin);
  merge(0, contacts, kStageBegin);
  merge(2, physics, kStageEnd);
  run();
  EXPECT_FALSE(timed(physics));
  EXPECT_FALSE(timed(contacts));
  EXPECT_EQ(walk.unpaired(), std::vector<StageId>{physics});  // its begin, and no end
}

TEST_F(Walk, BoundariesMergedIntoOneStampKeepTheHostsOrder) {
  // contacts began and ended (no work between) within e0's instant: begin first, a stage of 0.
  eager_at(1000, physics, kStageBegin);
  eager_at(2000, physics, kStageEnd);
  merge(1, contacts, kStageBegin);
  merge(1, contacts, kStageEnd);
  run(100);
  expect_ns(contacts, 0.0);
  expect_ns(physics, 1000.0 - 100.0);
  EXPECT_TRUE(walk.unpaired().empty());
}

TEST_F(Walk, EagerStampsAtOneInstantKeepStreamOrder) {
  eager_at(1000, contacts, kStageBegin);
  eager_at(1000, contacts, kStageEnd);
  run();
  expect_ns(contacts, 0.0);
  EXPECT_TRUE(walk.unpaired().empty());
}

TEST_F(Walk, AtOneInstantTheGraphsStampsComeBeforeTheEagerOnes) {
  // physics' graph end and an eager physics begin at the same instant: the end closes the stage
  // first (400 ns); the eager begin then opens it again, never closed.
  graph_at(100, physics, kStageBegin);
  graph_at(500, physics, kStageEnd);
  eager_at(500, physics, kStageBegin);
  run();
  expect_ns(physics, 400.0);
  EXPECT_EQ(walk.unpaired(), std::vector<StageId>{physics});
}

TEST_F(Walk, StampsThatDoNotPairAreUnpairedAndUntimed) {
  // contacts' end ran before its begin (a stamp run late); sensors/Imu never ended.
  graph_at(100, contacts, kStageEnd);
  graph_at(200, contacts, kStageBegin);
  graph_at(300, contacts, kStageEnd);
  graph_at(400, imu, kStageBegin);
  run();
  EXPECT_FALSE(timed(contacts));
  EXPECT_FALSE(timed(imu));
  EXPECT_EQ(walk.unpaired(), (std::vector<StageId>{contacts, imu}));
}

TEST_F(Walk, NeverBelowZeroAndUnknownStagesIgnored) {
  graph_at(100, physics, kStageBegin);
  graph_at(150, physics, kStageEnd);
  graph_at(100, 999, kStageBegin);
  graph.push_back(StampEntry{-1, kStageEnd, 120});
  eager_at(110, imu, kStageBegin);
  run(1000);  // an eager stamp costs more than the stage lasted
  expect_ns(physics, 0.0);
  EXPECT_EQ(walk.unpaired(), std::vector<StageId>{imu});
}

TEST_F(Walk, EachWalkStartsAfresh) {
  graph_at(100, physics, kStageBegin);
  run();
  EXPECT_EQ(walk.unpaired().size(), 1u);
  graph_at(300, physics, kStageEnd);  // the last step's begin is gone
  run();
  EXPECT_FALSE(timed(physics));
  EXPECT_EQ(walk.unpaired(), std::vector<StageId>{physics});
}

// Begin 1000, hop 1100 (100 ns a stamp), roots a (2100) and b (1500), c (2000).
TEST(ReplayStamps, ANodeRunsFromItsLatestDependencyLessTheHop) {
  const unsigned long long t[] = {1000, 1100, 2100, 1500, 2000};  // a, the longest, ends last
  const ReplayStamps r{t, 5};
  EXPECT_TRUE(r.ran());
  EXPECT_TRUE(r.complete());
  EXPECT_EQ(r.hop(), 100u);
  EXPECT_EQ(r.span(), 1100u);  // to the latest stamp, not the last slot
  const std::vector<std::uint32_t> root = {1}, after_ab = {2, 3};
  EXPECT_EQ(r.start(after_ab), 2100u);
  EXPECT_NEAR(r.seconds(0, root) * 1e9, 900.0, 1e-6);
  EXPECT_NEAR(r.seconds(1, root) * 1e9, 300.0, 1e-6);
  const std::vector<std::uint32_t> after_b = {3};
  EXPECT_NEAR(r.seconds(2, after_b) * 1e9, 400.0, 1e-6);
  EXPECT_EQ(r.seconds(2, after_ab), 0.0);  // its start after its stamp: 0, not less
}

TEST(ReplayStamps, AStampThatDidNotRunLeavesTheReplayIncomplete) {
  const unsigned long long missing[] = {1000, 1100, 0, 1500, 2000};
  EXPECT_TRUE((ReplayStamps{missing, 5}.ran()));
  EXPECT_FALSE((ReplayStamps{missing, 5}.complete()));
  const unsigned long long idle[] = {0, 0, 0};
  EXPECT_FALSE((ReplayStamps{idle, 3}.ran()));
}

// a (slot 2) and b (slot 3) are roots; e is an empty node after both; c (slot 4) after e; d
// (slot 5) after c and a; f is an empty root; g (slot 6) after f.
TEST(StartSlots, ThroughEmptyNodesToTheStampsBefore) {
  GraphShape g;
  //            a   b   e       c    d       f   g
  g.deps = {{}, {}, {0, 1}, {2}, {3, 0}, {}, {5}};
  g.slot = {2, 3, kNoSlot, 4, 5, kNoSlot, 6};
  EXPECT_EQ(start_slots(g, 0), std::vector<std::uint32_t>{kHopSlot});
  EXPECT_EQ(start_slots(g, 3), (std::vector<std::uint32_t>{2, 3}));    // through e
  EXPECT_EQ(start_slots(g, 4), (std::vector<std::uint32_t>{2, 4}));    // each once, sorted
  EXPECT_EQ(start_slots(g, 6), std::vector<std::uint32_t>{kHopSlot});  // an empty root
}

// p and q are empty nodes after a (slot 2); r and s are empty roots; m (slot 3) after p and q, n
// (slot 4) after r and s.
TEST(StartSlots, EachSlotOnceThroughManyPaths) {
  GraphShape g;
  //            a   p    q    r   s   m       n
  g.deps = {{}, {0}, {0}, {}, {}, {1, 2}, {3, 4}};
  g.slot = {2, kNoSlot, kNoSlot, kNoSlot, kNoSlot, 3, 4};
  EXPECT_EQ(start_slots(g, 5), std::vector<std::uint32_t>{2});
  EXPECT_EQ(start_slots(g, 6), std::vector<std::uint32_t>{kHopSlot});
}

TEST(SlotRanges, ARetiredRangeIsReusedFirstFitElseTheEnd) {
  SlotRanges r(20);
  ASSERT_EQ(r.find(8), std::optional<std::size_t>(0));
  r.take(0, 8);
  ASSERT_EQ(r.find(8), std::optional<std::size_t>(8));
  r.take(8, 8);
  EXPECT_EQ(r.used(), 16u);
  EXPECT_EQ(r.find(5), std::nullopt);  // 16 + 5 > 20, nothing retired
  r.give_back(0, 8);
  EXPECT_EQ(r.find(9), std::nullopt);  // the retired range is too small, the end too short
  ASSERT_EQ(r.find(5), std::optional<std::size_t>(0));
  r.take(0, 5);
  EXPECT_EQ(r.used(), 16u);                             // the row does not grow
  ASSERT_EQ(r.find(3), std::optional<std::size_t>(5));  // what is left of it
  r.take(5, 3);
  ASSERT_EQ(r.find(4), std::optional<std::size_t>(16));  // used up: the end again
  r.take(16, 4);
  EXPECT_EQ(r.used(), 20u);
  EXPECT_EQ(r.find(1), std::nullopt);
}

TEST(SlotRanges, FirstFitPassesOverARangeTooSmall) {
  SlotRanges r(100);
  r.take(0, 4);
  r.take(4, 10);
  r.take(14, 4);
  r.give_back(0, 4);
  r.give_back(4, 10);
  ASSERT_EQ(r.find(6), std::optional<std::size_t>(4));  // not the first range (4 slots)
  r.take(4, 6);
  ASSERT_EQ(r.find(4), std::optional<std::size_t>(0));  // the first fits now
  r.take(0, 4);
  ASSERT_EQ(r.find(4), std::optional<std::size_t>(10));  // what is left of the second
  r.take(10, 4);
  EXPECT_EQ(r.find(1), std::optional<std::size_t>(18));  // both used up: the end
  EXPECT_EQ(r.used(), 18u);
}

TEST(ClockMap, TwoPointsInterpolateTheRate) {
  const ClockPoint from{true, 1'000, 5'000, 10}, to{true, 1'001'000, 1'005'100, 10};
  const ClockMap m(from, to);
  EXPECT_EQ(m.to_host(1'000), 5'000);
  EXPECT_EQ(m.to_host(1'001'000), 1'005'100);
  EXPECT_EQ(m.to_host(501'000), 505'050);  // 500,000 device ns at 1.0001 host ns each
}

TEST(ClockMap, OnePointAloneKeepsTheRateOne) {
  const ClockPoint bad{}, to{true, 2'000, 9'000, 5};
  EXPECT_EQ(ClockMap(bad, to).to_host(2'500), 9'500);
  EXPECT_EQ(ClockMap(to, bad).to_host(1'500), 8'500);
  EXPECT_EQ(ClockMap(to, to).to_host(2'100), 9'100);  // one instant: no rate to read
}

TEST(SaidOnce, TheFirstTimeOnlyFromAnyThread) {
  simprof::testing::SimprofLog log;
  SaidOnce once;
  EXPECT_FALSE(once.said());
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([&once, i] { once.warn("problem {}", i); });
  for (std::thread& t : threads) t.join();
  once.error("problem again");
  EXPECT_TRUE(once.said());
  EXPECT_EQ(log.count("problem"), 1) << log.str();
  SaidOnce other;  // each problem its own
  other.error("another");
  EXPECT_EQ(log.count("another"), 1) << log.str();
}

TEST(TimerVoice, NamesTheTimerSaysTheFirstFailureAndEachProblemOnce) {
  simprof::testing::SimprofLog log;
  TimerVoice voice("SomeTimer");
  EXPECT_FALSE(voice.failed_before());
  voice.failed("cudaMemcpyAsync", "cudaErrorInvalidValue");
  voice.failed("cudaEventRecord", "cudaErrorLaunchFailure");  // an echo of the first: not said
  EXPECT_TRUE(voice.failed_before());
  EXPECT_EQ(log.count("simprof: SomeTimer: cudaMemcpyAsync failed: cudaErrorInvalidValue"), 1)
      << log.str();
  EXPECT_EQ(log.count("cudaEventRecord"), 0) << log.str();
  SaidOnce ring, other;
  voice.warn(ring, "step {} is left out", 7);
  voice.warn(ring, "step {} is left out", 8);
  voice.warn(other, "another problem");
  EXPECT_EQ(log.count("simprof: SomeTimer: step 7 is left out"), 1) << log.str();
  EXPECT_EQ(log.count("step 8"), 0) << log.str();
  EXPECT_EQ(log.count("simprof: SomeTimer: another problem"), 1) << log.str();
  SaidOnce counted;
  voice.warn_counted(counted, "replay {} left out", 3);
  EXPECT_EQ(log.count("simprof: SomeTimer: replay 3 left out (said once; counted after)"), 1)
      << log.str();
}

TEST(SampleSchedule, OneStepInEveryAtItsOffset) {
  const SampleSchedule s = SampleSchedule::checked("Opts", 4, 1);
  std::vector<std::uint64_t> sampled;
  for (std::uint64_t step = 0; step < 12; ++step)
    if (s.sampled(step)) sampled.push_back(step);
  EXPECT_EQ(sampled, (std::vector<std::uint64_t>{1, 5, 9}));
  // -1: 8 where every is above 8 (clear of a power of two's multiples), else 0.
  EXPECT_EQ(SampleSchedule::checked("Opts", 128, -1).offset, 8u);
  EXPECT_EQ(SampleSchedule::checked("Opts", 8, -1).offset, 0u);
  EXPECT_TRUE(SampleSchedule::checked("Opts", 1, 0).sampled(12345));
}

TEST(SampleSchedule, BadValuesAreNamedWithWhatWasExpected) {
  using simprof::testing::error_of;
  EXPECT_EQ(error_of<std::invalid_argument>([] { (void)SampleSchedule::checked("Opts", 0, 0); }),
            "simprof: Opts.sample_every = 0 (expected >= 1)");
  EXPECT_EQ(error_of<std::invalid_argument>([] { (void)SampleSchedule::checked("Opts", 4, 4); }),
            "simprof: Opts.sample_offset = 4 (expected -1, or 0 to sample_every - 1 = 3)");
  EXPECT_NE(error_of<std::invalid_argument>([] {
              (void)SampleSchedule::checked("Opts", 4, -2);
            }).find("sample_offset = -2"),
            std::string::npos);
}

TEST(RunningStat, CountSumLeastGreatestAndMean) {
  RunningStat s;
  EXPECT_TRUE(std::isnan(s.mean()));
  for (const double x : {3.0, -1.0, 4.0}) s.add(x);
  EXPECT_EQ(s.count, 3u);
  EXPECT_DOUBLE_EQ(s.sum, 6.0);
  EXPECT_DOUBLE_EQ(s.min, -1.0);
  EXPECT_DOUBLE_EQ(s.max, 4.0);
  EXPECT_DOUBLE_EQ(s.mean(), 2.0);
  RunningStat one;
  one.add(5.0);  // the first value is both bounds, whatever the zero-initialised ones were
  EXPECT_DOUBLE_EQ(one.min, 5.0);
  EXPECT_DOUBLE_EQ(one.max, 5.0);
}

// LaunchScopes's events: a scope's pair, plus each event its nested scopes recorded inside it.
TEST(EventCost, AScopeCarriesItsPairAndTheEventsNestedInIt) {
  using simprof::cuda::EventCost;
  using simprof::cuda::detail::events_ns;
  EventCost cost;
  cost.measured = true;
  cost.pair_ns = 2'000;
  cost.inside_ns = 700;
  // physics (events 0 and 3) around contacts (1 and 2); sensors (4, 5) after.
  const int physics_b[] = {0}, physics_e[] = {3}, contacts_b[] = {1}, contacts_e[] = {2};
  EXPECT_EQ(events_ns(physics_b, physics_e, 1, cost), 2'000 + 2 * 700);
  EXPECT_EQ(events_ns(contacts_b, contacts_e, 1, cost), 2'000);
  // Two streams: four events of its own (0, 1 begins; 4, 5 ends) and one nested scope's two.
  const int two_b[] = {0, 1}, two_e[] = {5, 4};
  EXPECT_EQ(events_ns(two_b, two_e, 2, cost), 2'000 + 2 * 700);
  const int no_end[] = {-1};  // its end is missing: nothing taken off
  EXPECT_EQ(events_ns(physics_b, no_end, 1, cost), 0);
  EXPECT_EQ(events_ns(physics_b, physics_e, 0, cost), 0);  // it launched nothing
  simprof::cuda::ScopeTiming t;
  t.begin_ns = 1'000;
  t.end_ns = 2'500;
  t.events_ns = 2'000;  // more than its span (the cost is a mean): its work is 0, never below
  EXPECT_EQ(t.work_ns(), 0);
  t.end_ns = 40'000;
  EXPECT_EQ(t.work_ns(), 37'000);
}

// A parent's work never reads less than a child's: its nested events' cost is cut to fit.
TEST(EventCost, AParentsWorkHoldsItsChildrensWork) {
  using simprof::cuda::ScopeTiming;
  const auto scope = [](int depth, std::int64_t b, std::int64_t e, std::int64_t events) {
    ScopeTiming t;
    t.depth = depth;
    t.launched = true;
    t.begin_ns = b;
    t.end_ns = e;
    t.events_ns = events;
    return t;
  };
  // A step whose one stage spans it: the step's four events cost more than their span holds.
  std::vector<ScopeTiming> w = {scope(0, 0, 34'000, 5'000), scope(1, 500, 33'500, 3'000),
                                scope(2, 1'000, 33'000, 2'000)};  // and a grandchild
  simprof::cuda::detail::keep_nested_inside(w);
  EXPECT_EQ(w[2].work_ns(), 30'000);  // a leaf keeps its own
  EXPECT_EQ(w[1].work_ns(), 30'000);  // 33,000 - 3,000 would be; it held 30,000 already
  EXPECT_EQ(w[0].work_ns(), 30'000);  // 29,000 would be less than its child's
  EXPECT_EQ(w[0].events_ns, 4'000);
  // Siblings: each checked against the parent alone; one that launched nothing is no bound.
  std::vector<ScopeTiming> s = {scope(0, 0, 100'000, 6'000), scope(1, 0, 60'000, 2'000),
                                scope(1, 60'000, 99'000, 2'000), ScopeTiming{}};
  s[3].depth = 1;
  simprof::cuda::detail::keep_nested_inside(s);
  EXPECT_EQ(s[0].events_ns, 6'000);  // 94,000 holds either child (58,000, 37,000)
}

}  // namespace
