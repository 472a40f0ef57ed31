// SPDX-License-Identifier: MIT
// The trace session: the steps it records by its schedule, its sources, what it drops, the files it
// writes and a session that ends early.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "simprof/base/manual_clock.hpp"
#include "simprof/detail/thread_id.hpp"
#include "simprof/profiler/macros.hpp"
#include "simprof/trace/chrome_json.hpp"
#include "simprof/trace/schedule.hpp"
#include "simprof/trace/session.hpp"
#include "simprof/trace/span.hpp"
#include "simprof/trace/time_base.hpp"
#include "test_util.hpp"

using namespace simprof;
using json = nlohmann::json;

using simprof::testing::quiet;
using simprof::testing::slurp;

namespace {
// A source that logs its calls and contributes one event per active window.
struct FakeSource : TraceSource {
  std::vector<std::string> calls;
  const TimeBase* bound = nullptr;
  void bind(const TimeBase& tb) override {
    calls.push_back("bind");
    bound = &tb;
  }
  void start() override { calls.push_back("start"); }
  void discard() override { calls.push_back("discard"); }
  std::uint64_t stop_and_collect(std::vector<Span>& out) override {
    calls.push_back("collect");
    out.push_back(Span::kernel("gpu_kernel", 0, 1, 0, 7, 1));
    return 2;  // it lost two
  }
};
}  // namespace

TEST(TraceSession, RecordsTheScheduledStepsOnly) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  TraceOptions o;
  o.schedule = Schedule{1, 1, 2, 1, 0};  // step 0 wait, 1 warm-up, 2-3 active
  o.wall_clock = false;                  // the manual clock's own nanoseconds
  TraceSession session(prof, o);
  FakeSource src;
  auto joined = session.add_source(&src);
  std::vector<Trace> traces;
  session.on_trace_ready([&](const Trace& t, std::uint64_t w) {
    EXPECT_EQ(w, traces.size());
    traces.push_back(t);
  });
  for (int i = 0; i < 6; ++i) {
    auto step = prof.step();
    mc.advance_ns(1000);
    {
      auto s = prof.stage("physics");
      mc.advance_ns(2000);
    }
    mc.advance_ns(500);
  }
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(session.windows(), 1u);
  EXPECT_EQ(src.calls, (std::vector<std::string>{"bind", "start", "discard", "collect"}));
  EXPECT_EQ(src.bound, &session.time_base());
  std::vector<std::string> names;
  for (const auto& e : traces[0].spans)
    if (e.kind != SpanKind::kCounter) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"physics", "ProfilerStep#2", "physics",
                                             "ProfilerStep#3", "gpu_kernel"}));
  const Span& phys = traces[0].spans[0];
  EXPECT_EQ(phys.kind, SpanKind::kCpuStage);
  EXPECT_EQ(phys.begin_ns, 2 * 3500 + 1000);  // step 2 starts at 7 us; physics 1 us later
  EXPECT_EQ(phys.duration_ns(), 2000);
  EXPECT_EQ(phys.step(), 2u);
  EXPECT_EQ(phys.stage(), prof.find_stage("physics"));
  EXPECT_TRUE(traces[0].spans[1].is_step());
  EXPECT_EQ(traces[0].dropped, 2u);
  EXPECT_EQ(session.dropped(), 2u);
}

TEST(TraceSession, DropsBeyondCapacityAndSaysSo) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  TraceOptions o;
  o.schedule = Schedule{0, 0, 1, 1, 0};
  o.max_cpu_events = 3;
  TraceSession session(prof, o);
  Trace got;
  session.on_trace_ready([&](const Trace& t, std::uint64_t) { got = t; });
  {
    auto step = prof.step();
    for (int i = 0; i < 5; ++i) auto s = prof.stage("tick");
  }
  EXPECT_EQ(got.dropped, 3u);  // 5 stages + the step = 6 spans, 3 kept
  EXPECT_NE(to_chrome_json(got).find("\"dropped_events\": \"3\""), std::string::npos);
}

TEST(TraceSession, DefaultHandlerWritesOneFilePerWindow) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  TraceOptions o;
  o.schedule = Schedule{0, 0, 1, 2, 0};
  o.dir = ::testing::TempDir();
  o.prefix = "simprof_session_test";
  TraceSession session(prof, o);
  for (int i = 0; i < 3; ++i) {
    auto step = prof.step();
    auto s = prof.stage("physics");
    mc.advance_ns(100);
  }
  ASSERT_EQ(session.files().size(), 2u);
  EXPECT_EQ(session.files()[1], o.dir + "/simprof_session_test_1/rank0.json");
  for (const auto& f : session.files()) {
    const json j = json::parse(slurp(f));
    EXPECT_EQ(j["traceEvents"][0]["ph"], "M");
    std::filesystem::remove_all(std::filesystem::path(f).parent_path());
  }
}

// A session destroyed inside its window says so, and writes what its active phase recorded as a
// valid trace marked incomplete; one destroyed in the warm-up writes nothing.
TEST(TraceSession, EndingEarlySaysSoAndWritesWhatItHas) {
  simprof::testing::SimprofLog log;
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  TraceOptions o;
  o.schedule = Schedule{1, 1, 3, 1, 0};  // step 0 wait, 1 warm-up, 2-4 active
  o.dir = ::testing::TempDir() + "simprof_early_end";
  o.wall_clock = false;
  std::filesystem::remove_all(o.dir);
  std::string path;
  {
    TraceSession session(prof, o);
    path = session.path_of(0);
    for (int i = 0; i < 4; ++i) {  // two of the three active steps
      auto step = prof.step();
      auto s = prof.stage("physics");
      mc.advance_ns(1000);
    }
  }
  EXPECT_NE(log.str().find("trace session ended in window 0's active phase after 2 of 3 steps"),
            std::string::npos)
      << log.str();
  const json j = json::parse(slurp(path));
  EXPECT_EQ(j["otherData"]["incomplete"], "true");
  EXPECT_EQ(j["otherData"]["active_steps"], "2 of 3");
  int steps = 0;
  for (const auto& e : j["traceEvents"])
    steps += e.value("name", "").rfind("ProfilerStep#", 0) == 0;
  EXPECT_EQ(steps, 2);
  std::filesystem::remove_all(o.dir);
  log.clear();
  {
    TraceSession session(prof, o);  // ends in the warm-up: nothing to write
    for (int i = 0; i < 2; ++i) auto step = prof.step();
  }
  EXPECT_NE(log.str().find("trace session ended in window 0's warm-up"), std::string::npos)
      << log.str();
  EXPECT_FALSE(std::filesystem::exists(o.dir + "/simprof_trace_0"));
  log.clear();
  { TraceSession quiet_session(prof, o); }  // never started a window: nothing said
  EXPECT_EQ(log.str(), "");
}

// A source's membership is the registration add_source() returns: moved, it stays; reset or gone,
// the source is out of the session (and may join again); a session that goes first ends it.
TEST(TraceSession, ARegistrationTakesItsSourceOutWhenItGoes) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  TraceOptions o;
  o.schedule = Schedule{0, 0, 1, 3, 0};  // three one-step windows
  o.wall_clock = false;
  TraceSession session(prof, o);
  std::vector<std::size_t> kernels;
  session.on_trace_ready([&](const Trace& t, std::uint64_t) {
    std::size_t n = 0;
    for (const Span& s : t.spans) n += s.kind == SpanKind::kKernel;
    kernels.push_back(n);
  });
  auto one_step = [&] {
    auto st = prof.step();
    mc.advance_ns(1000);
  };
  FakeSource src;
  SourceRegistration joined = session.add_source(&src);
  EXPECT_TRUE(joined.active());
  one_step();
  SourceRegistration moved = std::move(joined);
  EXPECT_FALSE(joined.active());  // NOLINT(bugprone-use-after-move): a moved-from registration
  EXPECT_TRUE(moved.active());
  one_step();
  moved.reset();
  EXPECT_FALSE(moved.active());
  one_step();
  EXPECT_EQ(kernels, (std::vector<std::size_t>{1, 1, 0})) << "the source left before window 2";
  SourceRegistration again = session.add_source(&src);  // out of the session: it may join again
  EXPECT_TRUE(again.active());

  FakeSource other;
  SourceRegistration outlived;
  {
    TraceSession second(prof, o);
    outlived = second.add_source(&other);
    EXPECT_TRUE(outlived.active());
  }
  EXPECT_FALSE(outlived.active()) << "its session went first";

  SourceRegistration orphan;
  {
    FakeSource gone;
    orphan = session.add_source(&gone);
    EXPECT_TRUE(orphan.active());
  }  // the source goes before its registration: it leaves the session and ends the registration
  EXPECT_FALSE(orphan.active());
  orphan.reset();  // nothing left to read (ASan would see a read of the source that is gone)
}

// The steps' spans are on the thread that runs the steps, not the one that made the session
// (`simprof run` makes its session at the program's first NVTX call, on any thread).
TEST(TraceSession, StageSpansAreOnTheThreadThatRunsTheSteps) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  TraceOptions o;
  o.schedule = Schedule{0, 0, 2, 1, 0};
  o.wall_clock = false;
  TraceSession session(prof, o);
  std::vector<Trace> traces;
  session.on_trace_ready([&](const Trace& t, std::uint64_t) { traces.push_back(t); });
  std::int64_t loop[2] = {0, 0};
  for (int i = 0; i < 2; ++i)  // each step on a thread of its own (joined before the next)
    std::thread([&, i] {
      loop[i] = detail::os_thread_id();
      auto step = prof.step();
      SIMPROF_STAGE(prof, "physics");
      mc.advance_ns(100);
    }).join();
  ASSERT_EQ(traces.size(), 1u);
  ASSERT_NE(loop[0], detail::os_thread_id());
  int stages = 0;
  for (const Span& s : traces[0].spans)
    if (s.kind == SpanKind::kCpuStage) {
      EXPECT_EQ(s.tid, loop[s.step()]) << s.name << " of step " << s.step();
      ++stages;
    }
  EXPECT_EQ(stages, 4);  // two steps, two physics
}
