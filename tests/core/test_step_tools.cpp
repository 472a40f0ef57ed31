// SPDX-License-Identifier: MIT
// StepTools: a backend's tools owned by the profiler (destroyed first when it goes, one owner) and
// found by code running inside one of its steps on the loop's thread.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <thread>

#include "simprof/base/manual_clock.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "test_util.hpp"

using simprof::ManualClock;
using simprof::StepListener;
using simprof::StepProfiler;
using simprof::StepTools;
using simprof::testing::error_of;
using simprof::testing::quiet;

namespace {

// Tools that listen to the profiler and detach in their destructor, as the CUDA backend's do.
struct Listening : StepTools, StepListener {
  StepProfiler& prof;
  bool* destroyed;
  simprof::ListenerAttachment attached;
  Listening(StepProfiler& p, bool* d) : prof(p), destroyed(d), attached(prof.attach(*this)) {}
  ~Listening() override {
    // The profiler is whole here, whichever of the two goes first.
    EXPECT_EQ(prof.listeners().size(), 1u);
    EXPECT_TRUE(attached);
    attached.detach();
    EXPECT_EQ(prof.listeners().size(), 0u);
    *destroyed = true;
  }
};

}  // namespace

TEST(StepTools, TheProfilerDestroysItsToolsFirstWhileItIsWhole) {
  bool destroyed = false;
  std::weak_ptr<StepTools> weak;
  {
    ManualClock mc;
    StepProfiler prof(quiet(), 0, mc.clock());
    auto tools = std::make_shared<Listening>(prof, &destroyed);
    weak = tools;
    prof.own_tools(std::move(tools));
    auto step = prof.step();
  }
  EXPECT_TRUE(destroyed);
  EXPECT_TRUE(weak.expired());
}

TEST(StepTools, OneOwnerAndReleaseDestroysThem) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  bool destroyed = false;
  auto first = std::make_shared<Listening>(prof, &destroyed);
  StepTools* raw = first.get();
  prof.own_tools(first);
  first.reset();
  const std::string why =
      error_of<std::logic_error>([&] { prof.own_tools(std::make_shared<StepTools>()); });
  EXPECT_NE(why.find("owns tools already"), std::string::npos) << why;
  EXPECT_NE(error_of<std::invalid_argument>([&] { prof.own_tools(nullptr); }), "");
  prof.release_tools(nullptr);  // not its tools: no change
  EXPECT_EQ(prof.tools(), raw);
  prof.release_tools(raw);
  EXPECT_TRUE(destroyed);
  EXPECT_EQ(prof.tools(), nullptr);
  EXPECT_TRUE(prof.listeners().empty());
}

TEST(StepTools, FoundInsideAStepOnTheLoopsThreadOnly) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  auto tools = std::make_shared<StepTools>();
  StepTools* raw = tools.get();
  EXPECT_EQ(StepProfiler::tools_in_step(), nullptr);
  {
    auto step = prof.step();
    EXPECT_EQ(StepProfiler::tools_in_step(), nullptr);  // none owned yet
    prof.own_tools(tools);                              // inside a step: found from now on
    EXPECT_EQ(StepProfiler::tools_in_step(), raw);
  }
  EXPECT_EQ(StepProfiler::tools_in_step(), nullptr);
  {
    auto step = prof.step();
    EXPECT_EQ(StepProfiler::tools_in_step(), raw);
    StepTools* other_thread = raw;
    std::thread([&] { other_thread = StepProfiler::tools_in_step(); }).join();
    EXPECT_EQ(other_thread, nullptr);
    prof.veto_step();
  }
  EXPECT_EQ(StepProfiler::tools_in_step(), nullptr);  // a vetoed step ends too
  // A step of a profiler without tools inside one with: the outer one's come back after it.
  StepProfiler inner(quiet(), 0, mc.clock());
  {
    auto step = prof.step();
    {
      auto s2 = inner.step();
      EXPECT_EQ(StepProfiler::tools_in_step(), raw);  // inner owns none: the outer's stay
    }
    EXPECT_EQ(StepProfiler::tools_in_step(), raw);
    prof.release_tools(raw);
    EXPECT_EQ(StepProfiler::tools_in_step(), nullptr);
  }
  EXPECT_NE(tools->serial(), std::make_shared<StepTools>()->serial());
}

TEST(StepTools, StepsOfTwoOwnersEndingInAnyOrderLeaveNoStalePointer) {
  ManualClock mc;
  auto a = std::make_unique<StepProfiler>(quiet(), 0, mc.clock());
  StepProfiler b(quiet(), 0, mc.clock());
  auto ta = std::make_shared<StepTools>();
  auto tb = std::make_shared<StepTools>();
  a->own_tools(ta);
  b.own_tools(tb);
  a->begin_step();
  b.begin_step();
  EXPECT_EQ(StepProfiler::tools_in_step(), tb.get());  // the step begun last
  a->end_step();                                       // a's ends first: b's stay
  EXPECT_EQ(StepProfiler::tools_in_step(), tb.get());
  b.end_step();
  EXPECT_EQ(StepProfiler::tools_in_step(), nullptr) << "a's tools put back after a's step ended";
  // a gives its tools up inside b's step, nested in a's: nothing of a's is found afterwards.
  a->begin_step();
  b.begin_step();
  a->release_tools(ta.get());
  ta.reset();
  b.end_step();
  EXPECT_EQ(StepProfiler::tools_in_step(), nullptr);
  a->end_step();
  a.reset();
  EXPECT_EQ(StepProfiler::tools_in_step(), nullptr);
}
