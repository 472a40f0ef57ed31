// SPDX-License-Identifier: MIT
// MemoryTracker with sources whose counts the test sets: allocations attributed to the stage that
// made them (children rolled into parents, as times are), per-step means, the steady-state
// warning (once, naming the innermost stage and its bytes), vetoed steps left out, the stage
// table's columns and the trace's counter tracks.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <tuple>

#include "simprof/base/manual_clock.hpp"
#include "simprof/memory/tracker.hpp"
#include "simprof/profiler/report.hpp"
#include "test_util.hpp"

using namespace simprof;
using simprof::testing::quiet;

namespace {

// An allocator the test drives: alloc()/free() move its cumulative counts and its bytes in use.
class FakeAllocator final : public AllocSource {
 public:
  void alloc(std::uint64_t bytes) {
    ++c_.allocs;
    c_.alloc_bytes += bytes;
    in_use_ += static_cast<std::int64_t>(bytes);
    peak_ = std::max(peak_, in_use_);
  }
  void free(std::uint64_t bytes) {
    ++c_.frees;
    c_.free_bytes += bytes;
    in_use_ -= static_cast<std::int64_t>(bytes);
  }
  AllocCounts counts() const noexcept override { return c_; }
  std::int64_t in_use_bytes() const noexcept override { return in_use_; }
  std::int64_t peak_bytes() const noexcept override { return peak_; }

 private:
  AllocCounts c_;
  std::int64_t in_use_ = 0, peak_ = 0;
};

ProfilingOptions with_stats() {
  ProfilingOptions o = quiet();
  o.stats_window = 100;
  return o;
}

}  // namespace

TEST(MemoryTracker, AttributesToTheStageThatAllocatedAndRollsUpLikeTimes) {
  ManualClock mc;
  StepProfiler prof(with_stats(), 0, mc.clock());
  FakeAllocator dev, host;
  MemoryTracker mem(prof, &dev, &host);
  for (int i = 0; i < 4; ++i) {
    auto step = prof.step();
    {
      auto s = prof.stage("physics");
      dev.alloc(100);
      dev.alloc(28);
      dev.free(28);
    }
    {
      auto s = prof.stage("sensors");
      auto c = prof.stage("sensors/Cam");
      host.alloc(50);
    }
    dev.alloc(4);  // between stages: the step's, no stage's
    mc.advance_ns(1000);
  }
  EXPECT_EQ(mem.steps("physics"), 4u);
  EXPECT_EQ(mem.total("physics", MemorySide::kDevice).allocs, 8u);
  EXPECT_EQ(mem.total("physics", MemorySide::kDevice).alloc_bytes, 512u);
  EXPECT_EQ(mem.total("physics", MemorySide::kDevice).frees, 4u);
  EXPECT_EQ(mem.total("physics", MemorySide::kDevice).free_bytes, 112u);
  EXPECT_DOUBLE_EQ(mem.allocs_per_step("physics", MemorySide::kDevice), 2.0);
  EXPECT_DOUBLE_EQ(mem.bytes_per_step("physics", MemorySide::kDevice), 128.0);
  EXPECT_DOUBLE_EQ(mem.allocs_per_step("sensors/Cam", MemorySide::kHost), 1.0);
  EXPECT_DOUBLE_EQ(mem.allocs_per_step("sensors", MemorySide::kHost), 1.0)
      << "parent includes child";
  EXPECT_DOUBLE_EQ(mem.allocs_per_step("sensors", MemorySide::kDevice), 0.0);
  EXPECT_DOUBLE_EQ(mem.allocs_per_step("step", MemorySide::kDevice), 3.0)
      << "2 in physics, 1 outside";
  EXPECT_DOUBLE_EQ(mem.bytes_per_step("step", MemorySide::kDevice), 132.0);
  EXPECT_EQ(mem.last_step(MemorySide::kHost).alloc_bytes, 50u);
  EXPECT_EQ(mem.device_in_use_bytes(), 4 * 104);
  EXPECT_EQ(mem.device_peak_bytes(), 4 * 104 - 4 + 28) << "the source's own peak, mid-step";
  EXPECT_EQ(mem.total("no such stage", MemorySide::kDevice), AllocCounts{});
  // The same totals by the StageId the hot path uses; the names are lookups.
  const StageId physics = prof.find_stage("physics");
  EXPECT_EQ(mem.total(physics, MemorySide::kDevice), mem.total("physics", MemorySide::kDevice));
  EXPECT_EQ(mem.steps(physics), mem.steps("physics"));
  EXPECT_EQ(mem.allocs_per_step(physics, MemorySide::kDevice),
            mem.allocs_per_step("physics", MemorySide::kDevice));
  EXPECT_EQ(mem.bytes_per_step(kStepStage, MemorySide::kDevice),
            mem.bytes_per_step("step", MemorySide::kDevice));
  EXPECT_EQ(mem.total(kNoStage, MemorySide::kDevice), AllocCounts{});

  const std::string table = stage_table(prof, mem);
  EXPECT_NE(table.find("dev allocs"), std::string::npos) << table;
  EXPECT_NE(table.find("host KiB"), std::string::npos) << table;
  // physics: 2 allocations, 0.125 KiB per step; Cam: no device allocation, 1 host one.
  EXPECT_NE(table.find("      2.00        0.1        0.00        0.0"), std::string::npos) << table;
  EXPECT_NE(table.find("      0.00        0.0        1.00        0.0"), std::string::npos) << table;
}

TEST(MemoryTracker, WarnsOnceWhenASteadyStepAllocatesOnTheDevice) {
  simprof::testing::SimprofLog log;
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  FakeAllocator dev;
  MemoryOptions o;
  o.warmup_steps = 3;
  MemoryTracker mem(prof, &dev, nullptr, o);
  for (int i = 0; i < 10; ++i) {
    auto step = prof.step();
    auto p = prof.stage("physics");
    if (i < 3) dev.alloc(1 << 20);  // the warm-up allocates: allowed
    if (i >= 6) {
      auto c = prof.stage("physics/contacts");
      dev.alloc(4096);
    }
  }
  EXPECT_EQ(mem.steady_allocating_steps(), 4u);
  EXPECT_EQ(mem.first_steady_allocation().step, 6u);
  EXPECT_EQ(mem.first_steady_allocation().stage, "physics/contacts") << "the innermost stage";
  EXPECT_EQ(mem.first_steady_allocation().allocs, 1u);
  EXPECT_EQ(mem.first_steady_allocation().bytes, 4096u);
  EXPECT_EQ(log.count("allocated on the device after the warm-up"), 1) << log.str();
  EXPECT_NE(log.str().find("step 6 allocated on the device after the warm-up (3 steps): 1 "
                           "allocation, 4096 bytes, in stage 'physics/contacts'"),
            std::string::npos)
      << log.str();
}

TEST(MemoryTracker, ASteadyStepThatAllocatesNothingReadsExactlyZero) {
  simprof::testing::SimprofLog log;
  StepProfiler prof(quiet(), 0);
  FakeAllocator dev;
  MemoryTracker mem(prof, &dev, nullptr);
  dev.alloc(1 << 20);  // before the loop: persistent buffers
  for (int i = 0; i < 1000; ++i) {
    auto step = prof.step();
    auto p = prof.stage("physics");
  }
  EXPECT_EQ(mem.total("step", MemorySide::kDevice), AllocCounts{});
  EXPECT_EQ(mem.steady_allocating_steps(), 0u);
  EXPECT_EQ(mem.steps("step"), 1000u);
  EXPECT_EQ(mem.device_in_use_bytes(), 1 << 20);
  EXPECT_EQ(log.str(), "");
}

TEST(MemoryTracker, VetoedStepsPublishNothing) {
  StepProfiler prof(quiet(), 0);
  FakeAllocator dev;
  MemoryTracker mem(prof, &dev, nullptr);
  {
    auto step = prof.step();
    auto p = prof.stage("physics");
    dev.alloc(10);
  }
  {
    auto step = prof.step();
    {
      auto p = prof.stage("physics");
      dev.alloc(20);
    }
    step.veto();
  }
  EXPECT_EQ(mem.steps("physics"), 1u);
  EXPECT_EQ(mem.total("physics", MemorySide::kDevice).alloc_bytes, 10u);
  EXPECT_EQ(mem.last_step(MemorySide::kDevice).alloc_bytes, 10u);
}

// Either order of registration: the window's last step is sampled whether the session or the
// tracker hears of its end first.
// (the tracker made before the session, the window handed over beside the loop)
class MemoryCounters : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(MemoryCounters, TraceWindowsCarryMemoryCounters) {
  const auto [tracker_first, background] = GetParam();
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  FakeAllocator dev;
  MemoryOptions mo;
  mo.max_counter_samples = 2;  // of a 3-step window: one dropped, and counted
  std::optional<MemoryTracker> mem;
  if (tracker_first) mem.emplace(prof, &dev, nullptr, mo);
  TraceOptions to;
  to.schedule = Schedule{0, 0, 3, 1, 0};
  to.wall_clock = false;
  to.background = background;
  TraceSession session(prof, to);
  if (!tracker_first) mem.emplace(prof, &dev, nullptr, mo);
  auto joined = session.add_source(&*mem);
  std::vector<Trace> traces;
  session.on_trace_ready([&](const Trace& t, std::uint64_t) { traces.push_back(t); });
  for (int i = 0; i < 6; ++i) {  // the window, then three steps while it is handed over
    auto step = prof.step();
    dev.alloc(1 << 20);
    mc.advance_ns(1000);
  }
  session.wait();
  ASSERT_EQ(traces.size(), 1u);
  std::vector<double> in_use, allocs;
  for (const Span& s : traces[0].spans) {
    if (s.kind != SpanKind::kCounter) continue;
    if (s.name == "device memory in use (MiB)") in_use.push_back(s.get<CounterPayload>().value);
    if (s.name == "device allocations per step") allocs.push_back(s.get<CounterPayload>().value);
  }
  EXPECT_EQ(in_use, (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(allocs, (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(traces[0].dropped, 1u);
}

INSTANTIATE_TEST_SUITE_P(Order, MemoryCounters,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const auto& p) {
                           return std::string(std::get<0>(p.param) ? "TrackerFirst"
                                                                   : "SessionFirst") +
                                  (std::get<1>(p.param) ? "Background" : "");
                         });

TEST(MemoryTracker, TheLastStepOfAWindowIsSampledWhicheverListenerHearsFirst) {
  StepProfiler prof(quiet(), 0);
  FakeAllocator dev;
  TraceOptions to;
  to.schedule = Schedule{0, 0, 1, 1, 0};
  to.wall_clock = false;
  TraceSession session(prof, to);  // a listener before the tracker: it ends the window first
  MemoryTracker mem(prof, &dev, nullptr);
  auto joined = session.add_source(&mem);
  std::vector<Trace> traces;
  session.on_trace_ready([&](const Trace& t, std::uint64_t) { traces.push_back(t); });
  {
    auto step = prof.step();
    dev.alloc(3 << 20);
  }
  ASSERT_EQ(traces.size(), 1u);
  std::vector<double> values;
  for (const Span& s : traces[0].spans)
    if (s.kind == SpanKind::kCounter) values.push_back(s.get<CounterPayload>().value);
  EXPECT_EQ(values, (std::vector<double>{3.0, 1.0})) << "in use (MiB), then allocations";
}

TEST(HostAllocations, CountsWhatTheHookSays) {
  HostAllocations h;
  EXPECT_FALSE(h.hooked());
  h.note_alloc(64);
  h.note_alloc(16);
  h.note_free(64);
  h.note_free(0);  // an unsized delete
  EXPECT_TRUE(h.hooked());
  const AllocCounts c = h.counts();
  EXPECT_EQ(c.allocs, 2u);
  EXPECT_EQ(c.alloc_bytes, 80u);
  EXPECT_EQ(c.frees, 2u);
  EXPECT_EQ(c.free_bytes, 64u);
}
