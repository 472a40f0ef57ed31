// SPDX-License-Identifier: MIT
// Every path that crosses threads, for ThreadSanitizer (scripts/test runs the core tests under it):
// the FPS line switched from another thread while the loop runs; a trace session's results read
// from another thread while windows are written; CUPTI's buffer hand-off (the pool the kernel
// tracer lends CUPTI buffers from, returned on CUPTI's own thread), without CUPTI.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <thread>
#include <vector>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "simprof/base/manual_clock.hpp"
#include "simprof/detail/buffer_pool.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/trace/session.hpp"
#include "test_util.hpp"

using namespace simprof;

TEST(Threads, FpsLineSwitchedFromAnotherThreadWhileTheLoopRuns) {
  ManualClock mc;
  ProfilingOptions o;
  StepProfiler prof(o, 1024, mc.clock());
  prof.fps().set_logger(
      std::make_shared<spdlog::logger>("null", std::make_shared<spdlog::sinks::null_sink_mt>()));
  std::atomic<bool> done{false};
  std::thread toggler([&] {
    bool on = false;
    while (!done.load(std::memory_order_relaxed)) prof.set_show_fps(on = !on);
    prof.set_show_fps(true);
  });
  for (int i = 0; i < 20000; ++i) {
    auto step = prof.step();
    mc.advance_ns(100'000);  // 100 us steps: a sample every 500 steps
  }
  done = true;
  toggler.join();
  EXPECT_TRUE(prof.options().show_fps);
  EXPECT_GE(prof.fps().num_samples(), 39u);
  EXPECT_NEAR(prof.fps().fps_per_env(), 10000.0, 1.0);
}

TEST(Threads, TraceResultsReadFromAnotherThreadWhileWindowsAreWritten) {
  ManualClock mc;
  StepProfiler prof(simprof::testing::quiet(), 64, mc.clock());
  TraceOptions t;
  t.schedule = Schedule{1, 0, 1, 0, 0};  // a window every other step, forever
  t.dir = ::testing::TempDir() + "simprof_threads_trace";
  t.wall_clock = false;
  std::filesystem::remove_all(t.dir);
  TraceSession session(prof, t);
  std::atomic<bool> done{false};
  std::uint64_t seen = 0;
  std::thread reader([&] {
    while (!done.load(std::memory_order_acquire)) {
      const std::size_t files = session.files().size();  // a file is listed before it is counted
      const std::uint64_t w = session.windows();
      EXPECT_GE(w, seen);  // never goes back
      seen = w;
      EXPECT_LE(files, w + 1);
      (void)session.dropped();
    }
  });
  for (int i = 0; i < 200; ++i) {
    auto step = prof.step();
    auto s = prof.stage("physics");
    mc.advance_ns(1000);
  }
  done = true;
  reader.join();
  EXPECT_EQ(session.windows(), 100u);
  EXPECT_EQ(session.files().size(), 100u);
  std::filesystem::remove_all(t.dir);
}

TEST(Threads, BufferPoolHandsBuffersToAnotherThreadAndBack) {
  constexpr std::uint64_t kHandOffs = 2000;
  detail::BufferPool pool(/*buffer_bytes=*/256, /*max_buffers=*/4);
  std::vector<std::uint8_t*> in_flight;
  std::mutex m;
  std::atomic<std::uint64_t> returned{0};
  // CUPTI's side: completes (returns) whatever the requester lent out, on its own thread, until it
  // has returned every buffer the requester will lend.
  std::thread completer([&] {
    while (returned.load() < kHandOffs) {
      std::uint8_t* b = nullptr;
      {
        std::lock_guard<std::mutex> lock(m);
        if (!in_flight.empty()) {
          b = in_flight.back();
          in_flight.pop_back();
        }
      }
      if (b == nullptr) {
        std::this_thread::yield();
        continue;
      }
      b[0] = 1;  // the "records" written into it
      EXPECT_TRUE(pool.release(b));
      ++returned;
    }
  });
  std::uint64_t lent = 0, refused = 0;
  while (lent < kHandOffs) {
    std::uint8_t* b = pool.acquire();
    if (b == nullptr) {  // all 4 out: CUPTI would drop and count the records
      ++refused;
      std::this_thread::yield();
      continue;
    }
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b) % 8, 0u) << "CUPTI wants 8-byte alignment";
    b[255] = 2;
    std::lock_guard<std::mutex> lock(m);
    in_flight.push_back(b);
    ++lent;
  }
  completer.join();
  EXPECT_EQ(returned.load(), lent);
  EXPECT_LE(pool.allocated(), 4u);
  EXPECT_EQ(pool.exhausted(), refused);
  EXPECT_FALSE(pool.release(reinterpret_cast<std::uint8_t*>(&lent)))  // not the pool's
      << "a foreign pointer is refused";
}
