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

// --- EngineZones on worker threads ------------------------------------------------------------

TEST(EngineZones, WorkerZonesGoToTheirTrackAndToCpuTimeNotTimings) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  EngineZones zones(prof, "physics");
  Traced tr(prof);
  std::int64_t worker_tid = 0;
  {
    auto step = prof.step();
    zones.enter("stepSimulation");  // the loop's own world
    mc.advance_ns(1'000);
    // Two worlds stepped one after the other on one worker (the clock only moves between them,
    // so the times are exact); the loop waits for it as a pool's caller would.
    std::thread worker([&] {
      worker_tid = detail::os_thread_id();
      for (int w = 0; w < 2; ++w) {
        zones.enter("stepSimulation");
        zones.enter("solve");
        zones.leave();
        zones.leave();
      }
    });
    worker.join();
    mc.advance_ns(2'000);
    zones.leave();
  }
  // The loop's wall time has the loop's zone only.
  EXPECT_DOUBLE_EQ(prof.timings().at("physics/stepSimulation"), 3e-6);
  EXPECT_FALSE(prof.timings().contains("physics/stepSimulation/solve"));
  // Worker CPU time by stage (zero-length here: the clock stood still on the worker).
  ASSERT_TRUE(zones.worker_cpu_seconds("physics/stepSimulation/solve"));
  EXPECT_DOUBLE_EQ(*zones.worker_cpu_seconds("physics/stepSimulation/solve"), 0.0);
  ASSERT_TRUE(zones.worker_cpu_seconds("physics"));
  ASSERT_EQ(tr.traces.size(), 1u);
  const auto worker_spans = named(tr.traces[0], "physics/stepSimulation/solve");
  ASSERT_EQ(worker_spans.size(), 2u);
  const auto outer = named(tr.traces[0], "physics/stepSimulation");
  ASSERT_EQ(outer.size(), 3u);  // the loop's one and the worker's two
  int on_worker = 0;
  for (const Span* s : outer) on_worker += s->tid == worker_tid;
  EXPECT_EQ(on_worker, 2);
  for (const Span* s : worker_spans) EXPECT_EQ(s->tid, worker_tid);
  EXPECT_NE(worker_tid, tr.find("ProfilerStep#0")->tid);
}

TEST(EngineZones, WorkerCpuSecondsSumAcrossThreads) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  EngineZones zones(prof, "physics");
  {
    auto step = prof.step();
    // Threads run one at a time, each moving the clock inside its zones: exact sums.
    for (int w = 0; w < 3; ++w) {
      std::thread worker([&] {
        zones.enter("stepSimulation");
        mc.advance_ns(1'000);
        zones.enter("solve");
        mc.advance_ns(2'000);
        zones.leave();
        zones.leave();
      });
      worker.join();
    }
  }
  EXPECT_DOUBLE_EQ(*zones.worker_cpu_seconds("physics/stepSimulation"), 9e-6);
  EXPECT_DOUBLE_EQ(*zones.worker_cpu_seconds("physics/stepSimulation/solve"), 6e-6);
  EXPECT_DOUBLE_EQ(*zones.worker_cpu_seconds("physics"), 9e-6);  // top-level zones only
  // The loop's wall time is not theirs: 9 us passed, but no loop stage ran.
  EXPECT_FALSE(prof.timings().contains("physics"));
  EXPECT_DOUBLE_EQ(prof.timings().at("step"), 9e-6);
  // The next step without worker zones has none.
  { auto step = prof.step(); }
  EXPECT_FALSE(zones.worker_cpu_seconds("physics/stepSimulation"));
}

// A worker keeps kMaxWorkerDepth zones open at once: deeper ones are not counted, said once, and
// their leaves pair with them, so that the zones around them and after them count as before.
TEST(EngineZones, WorkerZonesPastTheDepthAreSaidOnceAndPairWithTheirLeaves) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  EngineZones zones(prof, "physics");
  SimprofLog log;
  constexpr std::uint32_t kDeep = EngineZones::kMaxWorkerDepth + 8;
  {
    auto step = prof.step();
    std::thread worker([&] {
      for (std::uint32_t i = 0; i < kDeep; ++i) {
        zones.enter("z");  // level i + 1 advances 1 us, inside every level above it
        mc.advance_ns(1'000);
      }
      for (std::uint32_t i = 0; i < kDeep; ++i) zones.leave();
      zones.enter("after");
      mc.advance_ns(500);
      zones.leave();
    });
    worker.join();
  }
  std::string path = "physics";
  for (std::uint32_t level = 1; level <= EngineZones::kMaxWorkerDepth; ++level) {
    path += "/z";
    const auto s = zones.worker_cpu_seconds(path);
    ASSERT_TRUE(s) << path;
    EXPECT_DOUBLE_EQ(*s, 1e-6 * (kDeep + 1 - level)) << path;
  }
  EXPECT_FALSE(zones.worker_cpu_seconds(path + "/z"));  // level 33: not counted
  EXPECT_DOUBLE_EQ(*zones.worker_cpu_seconds("physics/after"), 0.5e-6);
  EXPECT_EQ(log.count("nested deeper than 32"), 1) << log.str();
  EXPECT_EQ(log.count("no zone open"), 0) << log.str();
}

// An EngineZones destroyed while a worker has zones of it open under another's, with a zone past
// the depth innermost: its frames go, and the zone not kept stays innermost (it pairs with the
// next leave), so the other's zones still pair with their own leaves.
TEST(EngineZones, AGoneOwnersFramesLeaveTheZonesNotKeptInnermost) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  EngineZones b(prof, "b");
  EngineZones c(prof, "c");
  auto a = std::make_unique<EngineZones>(prof, "a");
  SimprofLog log;
  constexpr std::uint32_t kB = EngineZones::kMaxWorkerDepth - 1;  // then one of a's: full
  std::promise<void> entered, a_gone;
  {
    auto step = prof.step();
    std::thread worker([&] {
      for (std::uint32_t i = 0; i < kB; ++i) {
        b.enter("z");  // level i + 1
        mc.advance_ns(1'000);
      }
      a->enter("y");
      mc.advance_ns(1'000);
      b.enter("deep");  // past the depth: not kept
      entered.set_value();
      a_gone.get_future().wait();
      c.enter("x");  // inside the zone not kept: not kept either
      c.leave();
      b.leave();  // "deep"
      for (std::uint32_t i = 0; i < kB; ++i) b.leave();
    });
    entered.get_future().wait();
    a.reset();
    a_gone.set_value();
    worker.join();
  }
  std::string path = "b";
  for (std::uint32_t level = 1; level <= kB; ++level) {
    path += "/z";
    const auto s = b.worker_cpu_seconds(path);
    ASSERT_TRUE(s) << path;
    EXPECT_DOUBLE_EQ(*s, 1e-6 * (kB + 2 - level)) << path;
  }
  EXPECT_FALSE(b.worker_cpu_seconds(path + "/deep"));
  EXPECT_FALSE(c.worker_cpu_seconds("c/x"));
  EXPECT_EQ(log.count("nested deeper than 32"), 2) << log.str();  // once by b, once by c
  EXPECT_EQ(log.count("no zone open"), 0) << log.str();
}

TEST(EngineZones, WorkerStrayLeaveIsSaidOnce) {
  StepProfiler prof(quiet());
  EngineZones zones(prof);
  SimprofLog log;
  std::thread worker([&] {
    zones.leave();
    zones.leave();
  });
  worker.join();
  EXPECT_EQ(log.count("no zone open on a worker thread"), 1) << log.str();
}

TEST(EngineZones, AScopeLeftOpenInsideAZoneDropsTheStepAndTheZonesRecover) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  EngineZones zones(prof);
  const StageId user = prof.stage_id("user");
  SimprofLog log;
  prof.begin_step();
  zones.enter("stepSimulation");
  prof.begin_stage(user);  // never ended: the profiler's own misuse
  const std::string e = error_of<std::logic_error>([&] { prof.end_step(); });
  EXPECT_NE(e.find("'user' is still open"), std::string::npos) << e;
  EXPECT_FALSE(prof.in_step());
  zones.leave();  // the engine's leave(): pairs with its zone, touches nothing
  EXPECT_EQ(log.count("leave()"), 0) << log.str();
  step_with_zone(prof, zones, mc, "stepSimulation", 1'000);
  EXPECT_EQ(prof.steps(), 1u);
  EXPECT_DOUBLE_EQ(prof.timings().at("physics/stepSimulation"), 1e-6);
}

// A listener that wants worker zones, counting them.
struct ZoneCount : StepListener {
  std::uint64_t zones = 0;
  std::int64_t ticks = 0;
  void on_worker_zone(StageId, std::int64_t begin, std::int64_t end, std::int64_t) override {
    ++zones;
    ticks += end - begin;
  }
};

TEST(EngineZones, WorkerZonesBeyondTheLimitAreDroppedCountedAndSaidOnce) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  EngineZones zones(prof);
  ZoneCount count;
  auto attached = prof.attach(count);  // spans wanted: every zone goes through the thread's queue
  SimprofLog log;
  const std::size_t extra = 10;
  std::thread worker([&] {  // no step ends meanwhile: they wait
    for (std::size_t i = 0; i < EngineZones::kMaxPending + extra; ++i) {
      zones.enter("stepSimulation");
      mc.advance_ns(1);
      zones.leave();
    }
  });
  worker.join();
  EXPECT_EQ(zones.dropped(), extra);
  EXPECT_EQ(log.count("worker zones of one thread waited for a step end"), 1) << log.str();
  { auto step = prof.step(); }  // the kept ones are handed over
  EXPECT_EQ(count.zones, EngineZones::kMaxPending);
  // The dropped zones' spans are gone; their time is not: the thread summed it itself.
  EXPECT_DOUBLE_EQ(*zones.worker_cpu_seconds("physics/stepSimulation"),
                   static_cast<double>(EngineZones::kMaxPending + extra) * 1e-9);
  attached.detach();
}

// While no listener wants worker zones, a worker thread sums them itself and queues none: any
// number waits for a step end, and the step end reads one sum per thread and path.
TEST(EngineZones, WithoutAListenerForThemWorkerZonesAreSummedOnTheirThread) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  EngineZones zones(prof);
  struct Timing : ZoneCount {  // a listener that only times steps (as StepPacer does)
    bool wants_worker_zones() const noexcept override { return false; }
  } timing;
  auto timing_attached = prof.attach(timing);
  const std::size_t n = EngineZones::kMaxPending * 2;
  std::thread worker([&] {
    for (std::size_t i = 0; i < n; ++i) {
      zones.enter("stepSimulation");
      zones.enter("solve");
      mc.advance_ns(2);
      zones.leave();
      mc.advance_ns(1);
      zones.leave();
    }
  });
  worker.join();
  { auto step = prof.step(); }
  EXPECT_EQ(zones.dropped(), 0u);
  EXPECT_EQ(timing.zones, 0u) << "a listener that does not want them is not called";
  EXPECT_DOUBLE_EQ(*zones.worker_cpu_seconds("physics/stepSimulation"), 3e-9 * n);
  EXPECT_DOUBLE_EQ(*zones.worker_cpu_seconds("physics/stepSimulation/solve"), 2e-9 * n);
  { auto step = prof.step(); }  // nothing ran since: none
  EXPECT_FALSE(zones.worker_cpu_seconds("physics/stepSimulation"));

  // One step in which a worker thread runs one zone of `ns`.
  auto step_with_worker_zone = [&](std::int64_t ns) {
    std::thread one([&] {
      zones.enter("stepSimulation");
      mc.advance_ns(ns);
      zones.leave();
    });
    one.join();
    auto step = prof.step();
  };
  // A listener that wants them, added between steps: the next zones reach it, and are counted once.
  ZoneCount spans;
  auto spans_attached = prof.attach(spans);
  step_with_worker_zone(5);
  EXPECT_EQ(spans.zones, 1u);
  EXPECT_EQ(timing.zones, 0u) << "only the listeners that want worker zones get them";
  EXPECT_DOUBLE_EQ(*zones.worker_cpu_seconds("physics/stepSimulation"), 5e-9);
  // Removed again: sums only.
  spans_attached.detach();
  step_with_worker_zone(7);
  EXPECT_EQ(spans.zones, 1u);
  EXPECT_DOUBLE_EQ(*zones.worker_cpu_seconds("physics/stepSimulation"), 7e-9);
  timing_attached.detach();
}

// An EngineZones made after a listener that wants worker zones sends them there; a zone that took
// no time still ran (0 s, not nullopt).
TEST(EngineZones, MadeAfterATraceItSendsWorkerZonesThereAndZeroLongZonesCount) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  Traced tr(prof);  // first: the EngineZones finds it when it is made
  EngineZones zones(prof);
  {
    auto step = prof.step();
    std::thread worker([&] {
      zones.enter("stepSimulation");
      zones.leave();
    });
    worker.join();
  }
  ASSERT_EQ(tr.traces.size(), 1u);
  EXPECT_EQ(named(tr.traces[0], "physics/stepSimulation").size(), 1u);
  ASSERT_TRUE(zones.worker_cpu_seconds("physics/stepSimulation"));
  EXPECT_DOUBLE_EQ(*zones.worker_cpu_seconds("physics/stepSimulation"), 0.0);
}

// One thread kept for a whole test (one lane in each EngineZones it enters): run(f) runs f there
// and returns once it has.
class OneThread {
 public:
  OneThread() : thread_([this] { loop(); }) {}
  ~OneThread() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void run(std::function<void()> f) {
    std::unique_lock<std::mutex> lock(m_);
    job_ = std::move(f);
    cv_.notify_all();
    cv_.wait(lock, [&] { return !job_; });
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || job_; });
      if (stop_) return;
      job_();
      job_ = nullptr;
      cv_.notify_all();
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::function<void()> job_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the rest is made
};

// A worker's lane keeps its own copy of whether spans are wanted: a listener added (or removed)
// after the thread's first zone changes what its next zones do. Queued zones beyond kMaxPending
// are dropped (counted), so a burst that size says whether the zones went through the queue.
TEST(EngineZones, AListenerAddedAfterAWorkersFirstZoneGetsItsNextZones) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  EngineZones zones(prof, "physics");
  ZoneCount count;
  OneThread worker;
  const std::size_t burst = EngineZones::kMaxPending + 10;
  auto zones_in_a_step = [&](std::size_t n) {
    auto step = prof.step();
    worker.run([&] {
      for (std::size_t i = 0; i < n; ++i) {
        zones.enter("stepSimulation");
        mc.advance_ns(1'000);
        zones.leave();
      }
    });
  };
  zones_in_a_step(burst);  // no listener: summed only, none queued, so none dropped
  EXPECT_EQ(zones.dropped(), 0u);
  auto count_attached = prof.attach(count);
  zones_in_a_step(1);
  EXPECT_EQ(count.zones, 1u) << "the zone after the listener came is handed to it";
  EXPECT_EQ(count.ticks, 1'000);
  count_attached.detach();
  zones_in_a_step(burst);  // the listener gone: queued no more
  EXPECT_EQ(zones.dropped(), 0u);
  EXPECT_EQ(count.zones, 1u);
  EXPECT_DOUBLE_EQ(*zones.worker_cpu_seconds("physics/stepSimulation"),
                   static_cast<double>(burst) * 1e-6);  // still summed
}

// A thread's sum of a path is one word with its ticks modulo 2^48 (the step end takes
// differences): on one thread, whose word carries on from step to step, a run whose total passes
// 2^48 ns (78 hours) several times reads each step exactly, and a zone of 2^48 ticks or more
// (which has no place in the sum) is handed over whole through the queue.
TEST(EngineZones, WorkerSumsStayExactPastTwoToThe48Ticks) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  EngineZones zones(prof, "physics");
  constexpr std::int64_t kWrap = std::int64_t{1} << 48;
  const std::int64_t lengths[] = {kWrap / 2, kWrap / 2 + 7, kWrap - 1, 5, kWrap, 3 * kWrap + 11,
                                  0,         kWrap - 3,     kWrap / 3, 2};
  OneThread worker;
  for (const std::int64_t ns : lengths) {
    {
      auto step = prof.step();
      worker.run([&] {
        zones.enter("stepSimulation");
        mc.advance_ns(ns);
        zones.leave();
      });
    }
    const auto got = zones.worker_cpu_seconds("physics/stepSimulation");
    ASSERT_TRUE(got.has_value()) << ns << " ns";
    EXPECT_EQ(prof.clock().ticks(*got), ns) << ns << " ns";  // ns: the ManualClock's ticks
  }
}

// A thread that runs more distinct zone paths than it sums (kMaxSums) hands the rest over one zone
// at a time: every path's time arrives, none twice.
TEST(EngineZones, PathsBeyondAThreadsSumsStillCount) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  EngineZones zones(prof);
  std::vector<std::string> names;
  for (std::uint32_t i = 0; i < EngineZones::kMaxSums + 5; ++i)
    names.push_back("zone" + std::to_string(i));
  std::thread worker([&] {
    for (int round = 0; round < 2; ++round)
      for (const std::string& name : names) {
        zones.enter(name.c_str());
        mc.advance_ns(3);
        zones.leave();
      }
  });
  worker.join();
  { auto step = prof.step(); }
  EXPECT_EQ(zones.dropped(), 0u);
  EXPECT_DOUBLE_EQ(*zones.worker_cpu_seconds("physics/zone0"), 6e-9);
  EXPECT_DOUBLE_EQ(*zones.worker_cpu_seconds("physics/zone1023"), 6e-9);  // the last summed
  EXPECT_DOUBLE_EQ(*zones.worker_cpu_seconds("physics/zone1024"), 6e-9);  // the first queued
  EXPECT_DOUBLE_EQ(*zones.worker_cpu_seconds("physics/zone1028"), 6e-9);
  EXPECT_DOUBLE_EQ(*zones.worker_cpu_seconds("physics"), 6e-9 * static_cast<double>(names.size()));
}

// A pool's threads keep their own queues: zones of many threads running at once all arrive at the
// step end, none twice, and a thread that has ended leaves nothing behind once it was read.
TEST(EngineZones, ZonesOfThreadsRunningAtOnceAllArriveOnce) {
  StepProfiler prof(quiet(), 0);
  EngineZones zones(prof);
  Traced tr(prof);
  constexpr int kThreads = 8, kZones = 500;
  {
    auto step = prof.step();
    std::vector<std::thread> pool;
    for (int t = 0; t < kThreads; ++t)
      pool.emplace_back([&] {
        for (int i = 0; i < kZones; ++i) {
          zones.enter("stepSimulation");
          zones.enter("solve");
          zones.leave();
          zones.leave();
        }
      });
    for (auto& t : pool) t.join();
  }
  ASSERT_EQ(tr.traces.size(), 1u);
  EXPECT_EQ(named(tr.traces[0], "physics/stepSimulation").size(),
            static_cast<std::size_t>(kThreads * kZones));
  EXPECT_EQ(named(tr.traces[0], "physics/stepSimulation/solve").size(),
            static_cast<std::size_t>(kThreads * kZones));
  EXPECT_EQ(zones.dropped(), 0u);
  { auto step = prof.step(); }  // the ended threads' queues were read: nothing comes again
  EXPECT_FALSE(zones.worker_cpu_seconds("physics/stepSimulation"));
}

// Workers hand zones over while the loop's thread ends steps and reads their queues (the reader
// and the writers at once, the rings going round more than once): every zone arrives exactly once.
TEST(EngineZones, ZonesHandedOverWhileWorkersRunArriveOnce) {
  StepProfiler prof(quiet(), 0);
  EngineZones zones(prof);
  ZoneCount count;
  auto count_attached = prof.attach(count);
  constexpr int kThreads = 4;
  constexpr std::size_t kPerThread = EngineZones::kMaxPending * 2 + 100;
  std::atomic<std::uint64_t> step_ends{0};
  std::atomic<int> running{kThreads};
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&] {
      for (std::size_t i = 0; i < kPerThread; ++i) {
        zones.enter("stepSimulation");
        zones.leave();
        if (i % 4096 == 4095) {  // at most 2 x 4096 waiting: none is dropped, however slow
          const std::uint64_t seen = step_ends.load();
          while (step_ends.load() == seen) std::this_thread::yield();
        }
      }
      running.fetch_sub(1);
    });
  double cpu = 0;  // the threads' own sums, read at every step end while they write them
  auto step_end = [&] {
    { auto step = prof.step(); }
    cpu += zones.worker_cpu_seconds("physics/stepSimulation").value_or(0.0);
  };
  while (running.load() > 0) {
    step_end();
    step_ends.fetch_add(1);
  }
  for (auto& t : pool) t.join();
  step_end();  // what the last step end did not see
  EXPECT_EQ(zones.dropped(), 0u);
  EXPECT_EQ(count.zones, static_cast<std::uint64_t>(kThreads) * kPerThread);
  EXPECT_GT(step_ends.load(), 8u) << "the steps ended while the workers ran";
  step_end();
  EXPECT_EQ(count.zones, static_cast<std::uint64_t>(kThreads) * kPerThread) << "none came twice";
  // The sums, read while being written, hold every zone's time once: the spans' total.
  const double spans = prof.clock().seconds(count.ticks);
  EXPECT_NEAR(cpu, spans, 1e-9 * spans + 1e-12);
  count_attached.detach();
}

// A zone a pool thread left open in an EngineZones that is gone is forgotten: the next one, made
// at the same address, does not take it as a parent.
