// SPDX-License-Identifier: MIT
// `simprof run`'s ranges as NVTX nests them, on an injected clock: a domain's ranges among
// themselves, start/end ranges, ranges that do not nest, and a step range never popped.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "range_fixture.hpp"
#include "range_record.hpp"
#include "range_report.hpp"
#include "range_steps.hpp"

using simprof::run::RangeSteps;
using simprof::run::testing::Fixture;

namespace {

constexpr std::uint64_t kEngine = 0x1000;  // an NVTX domain's handle

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST(RangeNesting, ADomainsRangeNestedInAStageIsItsChild) {
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  for (int i = 0; i < 3; ++i) {
    r.push(1, "step");
    r.push(1, "physics");
    f.clock.advance_ns(1000);
    r.push(1, "contacts", kEngine);
    f.clock.advance_ns(2000);
    r.pop(1, kEngine);
    r.pop(1);
    r.pop(1);
  }
  EXPECT_EQ(f.prof.steps(), 3u);
  EXPECT_DOUBLE_EQ(f.prof.stats("physics").mean, 3e-6);
  EXPECT_DOUBLE_EQ(f.prof.stats("physics/contacts").mean, 2e-6);
  EXPECT_EQ(r.counts().crossed, 0u);
}

TEST(RangeNesting, ADomainsPopClosesItsOwnRangeNotTheInnermost) {
  // The engine's "kernel" opens before "physics" and its pop comes first: NVTX keeps a stack per
  // domain, so that pop is kernel's. physics loses its stage there and stays open for its own pop
  // (counted); the next steps are whole.
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  r.push(1, "step");
  r.push(1, "kernel", kEngine);
  r.push(1, "physics");
  f.clock.advance_ns(1000);
  r.pop(1, kEngine);
  EXPECT_EQ(r.open_at_end(), 2u);  // kernel closed; physics, above it, open without a stage
  f.clock.advance_ns(1000);
  r.pop(1);
  EXPECT_EQ(r.open_at_end(), 1u);
  r.pop(1);
  for (int i = 0; i < 2; ++i) {
    r.push(1, "step");
    r.push(1, "physics");
    f.clock.advance_ns(1000);
    r.pop(1);
    r.pop(1);
  }
  EXPECT_EQ(f.prof.steps(), 3u);
  EXPECT_EQ(r.counts().crossed, 1u);
  EXPECT_EQ(r.counts().unmatched_pops, 0u);
  EXPECT_EQ(f.prof.stats("kernel/physics").count, 1u);
  EXPECT_EQ(f.prof.stats("physics").count, 2u);
  const std::string report = simprof::run::range_report(f.prof, r, "step");
  EXPECT_TRUE(has(report, "1 times a range ended while a range opened after it")) << report;
}

TEST(RangeNesting, StartEndRangesAreStepsAndStages) {
  // Warp's ScopedTimer(use_nvtx=True) marks its scopes with start/end ranges.
  Fixture f;
  RangeSteps r(f.prof, {"simulate"});
  std::uint64_t id = 0;
  for (int i = 0; i < 4; ++i) {
    const std::uint64_t step = ++id, collide = ++id;
    r.push(1, "simulate", 0, step);
    r.push(1, "collide", kEngine, collide);
    f.clock.advance_ns(4000);
    r.end(1, collide);
    f.clock.advance_ns(1000);
    r.end(1, step);
  }
  EXPECT_EQ(f.prof.steps(), 4u);
  EXPECT_DOUBLE_EQ(f.prof.stats("collide").mean, 4e-6);
  EXPECT_DOUBLE_EQ(f.prof.stats("step").mean, 5e-6);
  r.end(1, 999);  // no such range
  r.pop(1);       // a pop does not close a started range: none pushed
  EXPECT_EQ(r.counts().unmatched_pops, 2u);
}

TEST(RangeNesting, StartEndRangesThatOverlapCloseInOrder) {
  // a ends while b, started inside it, is open: b closes with a (its stage cut there), and b's own
  // end, later, is quiet.
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  r.push(1, "step");
  r.push(1, "a", 0, 1);
  r.push(1, "b", 0, 2);
  f.clock.advance_ns(1000);
  r.end(1, 1);
  f.clock.advance_ns(1000);
  r.end(1, 2);
  r.pop(1);
  EXPECT_EQ(f.prof.steps(), 1u);
  EXPECT_EQ(r.counts().crossed, 1u);
  EXPECT_EQ(r.counts().unmatched_pops, 0u);
  EXPECT_DOUBLE_EQ(f.prof.stats("a/b").mean, 1e-6);
  EXPECT_DOUBLE_EQ(f.prof.stats("a").mean, 1e-6);
  EXPECT_DOUBLE_EQ(f.prof.stats("step").mean, 2e-6);
  EXPECT_EQ(r.open_at_end(), 0u);
}

TEST(RangeNesting, AStepRangeNeverPoppedDropsOneStepNotTheRun) {
  // One missing pop (physics's, in step 3): the step range's pop closes physics instead, and the
  // step stays open until the next step's push, which drops it and goes on.
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  for (int i = 0; i < 10; ++i) {
    r.push(1, "step");
    r.push(1, "physics");
    f.clock.advance_ns(1000);
    if (i != 3) r.pop(1);
    r.pop(1);
  }
  EXPECT_EQ(f.prof.steps(), 9u);
  EXPECT_EQ(f.prof.stats("physics").count, 9u);
  EXPECT_EQ(r.counts().unclosed, 1u);
  EXPECT_EQ(r.counts().left_out, 0u);  // "step" never became a stage
  const auto doc = simprof::run::range_record(f.prof, r, "step", "prog", true);
  EXPECT_EQ(doc["counts"]["unclosed"], 1);
  const std::string report = simprof::run::range_report(f.prof, r, "step");
  EXPECT_TRUE(has(report, "1 ranges were never popped")) << report;
}

TEST(RangeNesting, TheStepsOpenStagesCloseWhenItIsDropped) {
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  r.push(1, "step");
  r.push(1, "physics");
  r.push(1, "contacts");
  f.clock.advance_ns(1000);
  r.push(1, "step");  // physics, contacts and the step never popped
  r.pop(1);
  EXPECT_EQ(r.counts().unclosed, 3u);
  EXPECT_EQ(f.prof.steps(), 1u);
  EXPECT_EQ(f.prof.stats("physics").count, 0u);  // the dropped step's stages are not counted
  EXPECT_EQ(r.open_at_end(), 0u);
}

TEST(RangeNesting, AStepWithStagesTakesOverFromALoaderThreadsRange) {
  // A loader thread repeats "load" (no ranges inside) before the loop starts: chosen first, then
  // the main thread's "step", with stages, takes over.
  Fixture f;
  RangeSteps r(f.prof, {});
  for (int i = 0; i < 3; ++i) {
    r.push(2, "load");
    r.pop(2);
  }
  EXPECT_EQ(r.step_name(), "load");
  for (int i = 0; i < 5; ++i) {
    r.push(1, "step");
    r.push(1, "physics");
    f.clock.advance_ns(1000);
    r.pop(1);
    r.pop(1);
    r.push(2, "load");
    r.pop(2);
  }
  EXPECT_EQ(r.step_name(), "step");
  EXPECT_EQ(r.step_thread(), 1u);
  EXPECT_EQ(r.counts().step_changes, 1u);
  EXPECT_EQ(r.steps(), 4u);  // the first run of "step" was before it repeated
  EXPECT_DOUBLE_EQ(f.prof.stats("physics").mean, 1e-6);
}

TEST(RangeNesting, ALeafOnAnotherThreadDoesNotTakeOverAStepWithStages) {
  Fixture f;
  RangeSteps r(f.prof, {});
  for (int i = 0; i < 4; ++i) {
    r.push(1, "step");
    r.push(1, "physics");
    r.pop(1);
    r.pop(1);
    r.push(2, "load");  // repeats, but no ranges inside it
    r.pop(2);
    r.push(2, "io");  // has one inside it, but the step has stages
    r.push(2, "read");
    r.pop(2);
    r.pop(2);
  }
  EXPECT_EQ(r.step_name(), "step");
  EXPECT_EQ(r.counts().step_changes, 0u);
  EXPECT_EQ(f.prof.steps(), 3u);
}

TEST(RangeNesting, AStartedRangeThatOutlivesItsStageClosesWithIt) {
  // "copy" starts inside physics and ends in the next step (an upload overlapping the next step):
  // it closes with physics, and its end, later, is quiet.
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  std::uint64_t previous = 0;
  for (std::uint64_t i = 1; i <= 20; ++i) {
    r.push(1, "step");
    if (previous != 0) r.end(1, previous);
    r.push(1, "physics");
    f.clock.advance_ns(1000);
    r.push(1, "copy", 0, i);
    f.clock.advance_ns(500);
    r.pop(1);
    r.pop(1);
    previous = i;
  }
  EXPECT_EQ(f.prof.steps(), 20u);
  EXPECT_DOUBLE_EQ(f.prof.stats("physics/copy").mean, 0.5e-6);
  EXPECT_EQ(r.counts().crossed, 20u);
  EXPECT_EQ(r.counts().unmatched_pops, 0u);
  EXPECT_EQ(r.counts().unclosed, 0u);
  EXPECT_EQ(r.open_at_end(), 0u);
}

TEST(RangeNesting, StartedRangesThatNeverNestDoNotPileUp) {
  // A loader's start/end range ends inside a pushed one, every time: nothing waits for it.
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  for (std::uint64_t i = 1; i <= 1000; ++i) {
    r.push(2, "load", 0, i);
    r.push(2, "decode");
    r.end(2, i);
    r.pop(2);
  }
  EXPECT_EQ(r.open_at_end(), 0u);
  EXPECT_EQ(r.counts().crossed, 1000u);
  EXPECT_EQ(r.counts().unmatched_pops, 0u);
  r.end(3, 12345);  // no such range, on a thread never seen
  EXPECT_EQ(r.counts().unmatched_pops, 1u);
  EXPECT_EQ(r.threads(), 1u);
}

TEST(RangeNesting, AStepRangeThatNestsItsOwnNameIsLearnedFromItsPop) {
  // Each "frame" holds "policy" and four substeps also named "frame": an inner push looks like a
  // missing pop, and the outer pop that follows shows it was not (twice, to be sure).
  Fixture f;
  RangeSteps r(f.prof, {"frame"});
  for (int i = 0; i < 10; ++i) {
    r.push(1, "frame");
    r.push(1, "policy");
    f.clock.advance_ns(1000);
    r.pop(1);
    for (int k = 0; k < 4; ++k) {
      r.push(1, "frame");
      f.clock.advance_ns(500);
      r.pop(1);
    }
    r.pop(1);
  }
  EXPECT_TRUE(r.nests_itself());
  EXPECT_EQ(r.steps(), 8u);  // from the third
  EXPECT_DOUBLE_EQ(f.prof.stats("policy").mean, 1e-6);
  EXPECT_DOUBLE_EQ(f.prof.stats("step").mean, 3e-6);
  EXPECT_EQ(r.counts().unmatched_pops, 0u);
  EXPECT_EQ(r.counts().unclosed, 0u);
  const std::string report = simprof::run::range_report(f.prof, r, "frame");
  EXPECT_TRUE(has(report, "is also pushed inside its steps")) << report;
}

TEST(RangeNesting, TheStepsNameInAnotherDomainIsAStageNotAMissingPop) {
  // An engine marks its substeps "frame" in its own domain inside the program's "frame": NVTX pops
  // each domain's own, so the inner one cannot be the outer one left open.
  Fixture f;
  RangeSteps r(f.prof, {"frame"});
  for (int i = 0; i < 5; ++i) {
    r.push(1, "frame");
    for (int k = 0; k < 2; ++k) {
      r.push(1, "frame", kEngine);
      f.clock.advance_ns(500);
      r.pop(1, kEngine);
    }
    f.clock.advance_ns(1000);
    r.pop(1);
  }
  EXPECT_EQ(r.steps(), 5u);
  EXPECT_EQ(r.counts().unclosed, 0u);
  EXPECT_EQ(r.counts().unmatched_pops, 0u);
  EXPECT_DOUBLE_EQ(f.prof.stats("step").mean, 2e-6);
  EXPECT_DOUBLE_EQ(f.prof.stats("frame").mean, 1e-6);  // two substeps of 0.5 us a step
}

TEST(RangeNesting, ARangeThatLosesItsStageIsTracedWholeAtItsClose) {
  // The engine's "kernel" is physics/kernel until physics closes under it; it stays open, a range
  // from then on, and its span (for the trace) is all of it.
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  std::vector<std::pair<std::string, std::int64_t>> seen;
  r.on_range([&](std::uint64_t, std::string_view name, std::int64_t b, std::int64_t e) {
    seen.emplace_back(std::string(name), e - b);
  });
  r.push(1, "step");
  r.push(1, "physics");
  f.clock.advance_ns(1000);
  r.push(1, "kernel", kEngine);
  f.clock.advance_ns(2000);
  r.pop(1);  // physics, under kernel
  f.clock.advance_ns(500);
  r.pop(1, kEngine);
  r.pop(1);
  EXPECT_DOUBLE_EQ(f.prof.stats("physics/kernel").mean, 2e-6);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], std::make_pair(std::string("kernel"), std::int64_t{2500}));
}

TEST(RangeNesting, NeverPoppedCountsOnlyTheRangesStillOpen) {
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  r.push(1, "step");
  r.push(1, "a", kEngine);
  r.push(1, "b");
  r.pop(1, kEngine);  // a closes with b (crossed), b and the step are never popped
  r.push(1, "step");
  r.pop(1);
  EXPECT_EQ(r.counts().crossed, 1u);
  EXPECT_EQ(r.counts().unclosed, 2u);
  EXPECT_EQ(f.prof.steps(), 1u);
  EXPECT_EQ(r.open_at_end(), 0u);  // a, ended already, went with them
}

TEST(RangeNesting, ATakeoverWaitsForTheOpenStepsEnd) {
  // The loader's leaf "load" is chosen and open when the main thread's "step" repeats: the main
  // thread takes over when "load" ends.
  Fixture f;
  RangeSteps r(f.prof, {});
  for (int i = 0; i < 2; ++i) {
    r.push(2, "load");
    r.pop(2);
  }
  ASSERT_EQ(r.step_name(), "load");
  r.push(2, "load");
  for (int i = 0; i < 2; ++i) {
    r.push(1, "step");
    r.push(1, "physics");
    r.pop(1);
    r.pop(1);
  }
  EXPECT_EQ(r.step_name(), "load");  // open: not yet
  r.pop(2);
  EXPECT_EQ(r.step_name(), "step");
  EXPECT_EQ(r.step_thread(), 1u);
  r.push(1, "step");
  r.pop(1);
  EXPECT_EQ(r.steps(), 1u);
}

TEST(RangeNesting, AMissingPopThenAnotherDomainsPopIsNotNesting) {
  // Domain B's "iter" around each step; the step's pop is missing every 10th iteration. The drop
  // takes "iter" with it, so B's pop after it has nothing to close: not the step's own domain.
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  for (int i = 0; i < 40; ++i) {
    r.push(1, "iter", kEngine);
    r.push(1, "step");
    r.push(1, "a");
    f.clock.advance_ns(1000);
    r.pop(1);
    if (i % 10 != 9) r.pop(1);
    r.pop(1, kEngine);
  }
  EXPECT_FALSE(r.nests_itself());
  EXPECT_EQ(r.counts().unclosed, 3u);  // the 10th, 20th and 30th steps (the 40th is open)
  EXPECT_EQ(r.steps(), 36u);
  EXPECT_TRUE(f.prof.in_step());  // the 40th, never popped
}

TEST(RangeNesting, TheDefaultStepIsChosenWhenAnotherDomainsRangeCrossesIt) {
  // Domain B's "kernel" opens inside "step" and closes after it: no step frame waits for it.
  Fixture f;
  RangeSteps r(f.prof, {});
  for (int i = 0; i < 20; ++i) {
    r.push(1, "step");
    r.push(1, "kernel", kEngine);
    f.clock.advance_ns(1000);
    r.pop(1);
    r.pop(1, kEngine);
  }
  EXPECT_EQ(r.step_name(), "step");
  EXPECT_EQ(r.steps(), 19u);
  EXPECT_EQ(r.open_at_end(), 0u);
}

TEST(RangeNesting, AStartedRangeUnderAnotherDomainsRangeDoesNotHoldTheStep) {
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  for (std::uint64_t i = 1; i <= 20; ++i) {
    r.push(1, "step");
    r.push(1, "copy", 0, i);  // ends in a later step
    r.push(1, "k", kEngine);
    f.clock.advance_ns(1000);
    r.pop(1);           // the step's: k is open above it
    r.pop(1, kEngine);  // k, then copy (over the step that ended), then the step
    if (i > 1) r.end(1, i - 1);
  }
  EXPECT_EQ(f.prof.steps(), 20u);
  EXPECT_EQ(r.counts().unmatched_pops, 0u);
  EXPECT_EQ(r.open_at_end(), 0u);
}

TEST(RangeNesting, AnotherDomainsRangeOpenAcrossStepsDoesNotHoldThem) {
  // A prefetch in its own domain opens in each step and closes in the next: balanced, and every
  // step ends at its own pop.
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  for (int i = 0; i < 200; ++i) {
    r.push(1, "step");
    r.push(1, "work");
    f.clock.advance_ns(1000);
    r.pop(1);
    if (i > 0) r.pop(1, kEngine);
    r.push(1, "inflight", kEngine);
    r.pop(1);
  }
  r.pop(1, kEngine);
  EXPECT_EQ(f.prof.steps(), 200u);
  EXPECT_EQ(r.counts().unclosed, 0u);
  EXPECT_EQ(r.counts().unmatched_pops, 0u);
  EXPECT_EQ(r.open_at_end(), 0u);
}

TEST(RangeNesting, NamesThatChangeEveryPushDoNotGrowWithoutBound) {
  // torch's emit_nvtx names each op "aten::mm, seq = N".
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  const std::size_t n = RangeSteps::kMostNames + 100;
  for (std::size_t i = 0; i < n; ++i) {
    r.push(1, "step");
    r.push(1, "aten::mm, seq = " + std::to_string(i));
    r.pop(1);
    r.pop(1);
  }
  EXPECT_EQ(f.prof.steps(), n);
  EXPECT_LE(f.prof.num_stages(), RangeSteps::kMostStages);
  EXPECT_LE(r.seen().size(), RangeSteps::kMostNames + 1);  // and "(more names)"
  EXPECT_GT(r.counts().left_out, 0u);
  EXPECT_GT(r.counts().unnamed, 0u);
  const std::string report = simprof::run::range_report(f.prof, r, "step");
  EXPECT_TRUE(has(report, "stage paths")) << report;
  EXPECT_TRUE(has(report, "pushes had a name past the first 4096")) << report;
}
