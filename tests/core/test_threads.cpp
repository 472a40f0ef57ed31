// SPDX-License-Identifier: MIT
// Every path that crosses threads, for ThreadSanitizer (scripts/test runs the core tests under it):
// the FPS line switched from another thread while the loop runs; a trace session's results read
// from another thread while windows are written; windows handed over on the session's writer
// thread (TraceOptions::background) while the loop goes on, and a source that goes first; CUPTI's
// buffer hand-off (the pool the kernel tracer lends CUPTI buffers from, returned on CUPTI's own
// thread), without CUPTI.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
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

namespace {

// A source that says on which thread each call came, and whose collection can be held back (as the
// CUDA tracer's waits for the device) until the test lets it go.
class ThreadedSource : public TraceSource {
 public:
  void bind(const TimeBase&) override {}
  void start() override { log("start"); }
  void discard() override { log("discard"); }
  void stop() override { log("stop"); }
  std::uint64_t stop_and_collect(std::vector<Span>& out) override {
    std::unique_lock<std::mutex> lock(m_);
    released_.wait(lock, [&] { return open_; });
    calls_.emplace_back("collect", std::this_thread::get_id());
    out.push_back(Span::kernel("gpu_kernel", 0, 1, 0, 7, ++collected_));
    return 1;
  }
  void hold() {
    std::lock_guard<std::mutex> lock(m_);
    open_ = false;
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(m_);
      open_ = true;
    }
    released_.notify_all();
  }
  std::vector<std::pair<std::string, std::thread::id>> calls() const {
    std::lock_guard<std::mutex> lock(m_);
    return calls_;
  }

 private:
  void log(const char* what) {
    std::lock_guard<std::mutex> lock(m_);
    calls_.emplace_back(what, std::this_thread::get_id());
  }
  mutable std::mutex m_;
  std::condition_variable released_;
  bool open_ = true;
  std::uint64_t collected_ = 0;
  std::vector<std::pair<std::string, std::thread::id>> calls_;
};

void run_steps(StepProfiler& prof, ManualClock& mc, int n) {
  for (int i = 0; i < n; ++i) {
    auto step = prof.step();
    auto s = prof.stage("physics");
    mc.advance_ns(1000);
  }
}

}  // namespace

TEST(Threads, BackgroundSessionCollectsBesideTheLoopAndWritesTheSameTrace) {
  std::vector<std::string> written[2];
  for (const bool background : {false, true}) {
    ManualClock mc;
    StepProfiler prof(simprof::testing::quiet(), 0, mc.clock());
    TraceOptions o;
    o.schedule = Schedule{1, 1, 2, 2, 0};  // windows at steps 1-3 and 5-7 (one wait, one warm-up)
    o.wall_clock = false;
    o.background = background;
    o.dir = ::testing::TempDir() + "simprof_background_" + std::to_string(background);
    std::filesystem::remove_all(o.dir);
    TraceSession session(prof, o);
    ThreadedSource src;
    auto joined = session.add_source(&src);
    if (background) src.hold();  // on the loop's thread, a held collection would hold the loop
    run_steps(prof, mc, 4);      // the first window ends with step 3
    if (background) {
      EXPECT_EQ(session.windows(), 0u) << "the loop went on while the window was collected";
      EXPECT_TRUE(session.files().empty());
    }
    src.release();
    session.wait();
    EXPECT_EQ(session.windows(), 1u);
    run_steps(prof, mc, 4);
    session.wait();
    ASSERT_EQ(session.windows(), 2u);
    EXPECT_EQ(session.dropped(), 2u);  // one lost per window, said by the source
    const auto loop = std::this_thread::get_id();
    std::vector<std::string> order;
    for (const auto& [what, thread] : src.calls()) {
      order.push_back(what);
      if (what == "collect")
        EXPECT_EQ(thread != loop, background) << "collect ran on the wrong thread";
      else
        EXPECT_EQ(thread, loop) << what << " left the loop's thread";
    }
    EXPECT_EQ(order, (std::vector<std::string>{"start", "discard", "stop", "collect", "start",
                                               "discard", "stop", "collect"}));
    for (const auto& f : session.files()) written[background].push_back(simprof::testing::slurp(f));
    std::filesystem::remove_all(o.dir);
  }
  ASSERT_EQ(written[1].size(), 2u);
  EXPECT_EQ(written[0], written[1]) << "the background trace differs from the synchronous one";
}

TEST(Threads, BackgroundWindowIsWrittenBeforeTheNextStartsAndWhenTheSessionEnds) {
  ManualClock mc;
  StepProfiler prof(simprof::testing::quiet(), 0, mc.clock());
  TraceOptions o;
  o.schedule = Schedule{0, 0, 1, 3, 0};  // three one-step windows, back to back
  o.background = true;
  o.wall_clock = false;
  std::vector<std::uint64_t> handed;
  auto src = std::make_unique<ThreadedSource>();  // outlives the session
  {
    TraceSession session(prof, o);
    auto joined = session.add_source(src.get());
    session.on_trace_ready([&](const Trace& t, std::uint64_t w) {
      handed.push_back(w);  // on the writer thread, one window at a time
      EXPECT_EQ(t.spans.back().correlation, w + 1) << "the window's own collection";
    });
    run_steps(prof, mc, 3);
  }  // the session waits for the third window before it goes
  EXPECT_EQ(handed, (std::vector<std::uint64_t>{0, 1, 2}));
  src.reset();  // the session went first: the source has nothing to leave
}

TEST(Threads, SourceThatGoesFirstWaitsForItsWindowAndLeavesTheSession) {
  ManualClock mc;
  StepProfiler prof(simprof::testing::quiet(), 0, mc.clock());
  TraceOptions o;
  o.schedule = Schedule{0, 0, 1, 2, 0};
  o.background = true;
  o.wall_clock = false;
  std::vector<std::size_t> spans;
  TraceSession session(prof, o);
  session.on_trace_ready([&](const Trace& t, std::uint64_t) { spans.push_back(t.spans.size()); });
  {
    ThreadedSource src;  // a user's source: no destructor of its own
    auto joined = session.add_source(&src);
    EXPECT_THROW((void)session.add_source(&src), std::logic_error);  // one session per source
    src.hold();
    run_steps(prof, mc, 1);  // window 0 ends; its collection waits on the source
    std::thread opener([&] { src.release(); });
    opener.join();
  }  // the source goes while (or after) window 0 is collected: it waits, then leaves
  EXPECT_EQ(session.windows(), 1u);
  run_steps(prof, mc, 1);  // window 1 runs without the source
  session.wait();
  EXPECT_EQ(spans, (std::vector<std::size_t>{3, 2}));  // physics, the step (+ the source's kernel)
}
