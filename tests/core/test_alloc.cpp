// SPDX-License-Identifier: MIT
// Proves that a steady-state step allocates nothing: this binary replaces the global operator new
// with one that counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <new>
#include <string>

#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "simprof/base/manual_clock.hpp"
#include "simprof/base/running_mean.hpp"
#include "simprof/profiler/macros.hpp"
#include "simprof/profiler/step_profiler.hpp"

namespace {
std::atomic<long> g_allocations{0};
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored \
    "-Wmismatched-new-delete"  // malloc/free behind new/delete is the point
#endif

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

struct Engine {
  simprof::ManualClock mc;
  simprof::StepProfiler prof;
  simprof::StageId physics, imu;
  explicit Engine(simprof::ProfilingOptions o)
      : prof(o, 1024, mc.clock()),
        physics(prof.stage_id("physics")),
        imu(prof.stage_id("sensors/Imu")) {}

  void step() {
    auto s = prof.step();
    {
      auto p = prof.stage(physics);
      mc.advance(0.001);
    }
    {
      auto i = prof.stage(imu);
      mc.advance(0.0002);
    }
    {
      auto r = prof.stage("rendering");  // the string path too
      mc.advance(0.0003);
    }
    { auto r = prof.stage("recorders"); }
    mc.advance(0.0005);
  }
};

// Keeps the count and the last line in fixed storage, so the sink itself never allocates.
class CountingSink : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  int lines = 0;
  char last[256] = {};

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    ++lines;
    const std::size_t n = std::min(msg.payload.size(), sizeof(last) - 1);
    std::copy_n(msg.payload.data(), n, last);
    last[n] = '\0';
  }
  void flush_() override {}
};

long allocations_during(const std::function<void()>& f) {
  const long before = g_allocations.load();
  f();
  return g_allocations.load() - before;
}

}  // namespace

TEST(Allocations, CounterWorks) {
  static int* volatile escape = nullptr;  // keeps the compiler from eliding the pair
  EXPECT_GE(allocations_during([] {
              escape = new int(3);
              delete escape;
            }),
            1);
}

TEST(Allocations, SteadyStateStepAllocatesNothing) {
  simprof::ProfilingOptions o;
  o.show_fps = false;
  o.timings_window = 8;
  o.stats_window = 64;
  Engine e(o);
  for (int i = 0; i < 3; ++i) e.step();  // first steps register the string-named stages
  const auto& t = e.prof.timings();
  double sum = 0;
  EXPECT_EQ(allocations_during([&] {
              for (int i = 0; i < 1000; ++i) {
                e.step();
                sum += t.at("physics") + t.find("sensors").value_or(0.0);
              }
            }),
            0);
  EXPECT_GT(sum, 0.0);
  EXPECT_GT(e.prof.fps().num_samples(), 10u);  // samples completed during the counted loop
}

TEST(Allocations, MacroInstrumentedStepAllocatesNothing) {
  simprof::ProfilingOptions o;
  o.show_fps = false;
  Engine e(o);
  auto step = [&] {
    SIMPROF_STEP(e.prof);
    {
      SIMPROF_STAGE(e.prof, "physics");
      e.mc.advance(0.001);
    }
    SIMPROF_STAGE(e.prof, "video/encode");  // registered on the first pass
    e.mc.advance(0.0002);
  };
  step();
  EXPECT_EQ(allocations_during([&] {
              for (int i = 0; i < 1000; ++i) step();
            }),
            0);
  EXPECT_NEAR(e.prof.timings().at("video"), 0.0002, 1e-12);
}

TEST(Allocations, PrintingTheFpsLineAllocatesNothing) {
  auto sink = std::make_shared<CountingSink>();
  auto logger = std::make_shared<spdlog::logger>("alloc-test", sink);
  simprof::ProfilingOptions o;
  Engine e(o);
  e.prof.fps().set_logger(logger);
  for (int i = 0; i < 100; ++i) e.step();
  const int before = sink->lines;
  const long n = allocations_during([&] {
    for (int i = 0; i < 100; ++i) e.step();
  });
  EXPECT_EQ(n, 0);
  EXPECT_GT(sink->lines, before);  // lines were printed while counting
  EXPECT_EQ(std::string(sink->last).rfind("Running at ", 0), 0u) << sink->last;
}

TEST(Allocations, RunningMeanUpdateAllocatesNothing) {
  simprof::RunningMean w(100);
  auto ema = simprof::RunningMean::ema(0.9);
  EXPECT_EQ(allocations_during([&] {
              for (int i = 0; i < 10000; ++i) {
                w.update(i * 0.5);
                ema.update(i * 0.5);
              }
            }),
            0);
}
