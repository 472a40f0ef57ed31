// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <spdlog/spdlog.h>

#include "simprof/base/manual_clock.hpp"
#include "simprof/profiler/fps_tracker.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "test_util.hpp"

using namespace std::chrono_literals;
using simprof::FpsTracker;
using simprof::ManualClock;

namespace {

std::shared_ptr<spdlog::logger> capture(std::ostringstream& out) {
  return simprof::testing::capture_logger(out);
}

// Ticks every `dt_ms` milliseconds `n` times, advancing the manual clock.
void run(FpsTracker& fps, ManualClock& mc, int n, double dt_ms) {
  for (int i = 0; i < n; ++i) {
    mc.advance(dt_ms * 1e-3);
    fps.tick(mc.now_ns());
  }
}

}  // namespace

TEST(FpsTracker, FirstTickOnlyStartsTheClock) {
  ManualClock mc;
  FpsTracker fps(0.95, 50ms, 0, mc.clock());
  fps.set_show(false);
  mc.advance(10.0);  // however long before the first step: it is not a sample
  EXPECT_FALSE(fps.tick(mc.now_ns()));
  EXPECT_EQ(fps.num_samples(), 0u);
  EXPECT_TRUE(std::isnan(fps.fps_per_env()));
}

TEST(FpsTracker, SampleEndsAtTheFirstTickPastTheInterval) {
  ManualClock mc;
  FpsTracker fps(0.95, 50ms, 0, mc.clock());
  fps.set_show(false);
  fps.tick(mc.now_ns());
  run(fps, mc, 4, 10.0);  // 40 ms: not yet
  EXPECT_EQ(fps.num_samples(), 0u);
  mc.advance(0.010);
  EXPECT_TRUE(fps.tick(mc.now_ns()));  // 50 ms: 5 steps in 0.05 s
  EXPECT_EQ(fps.num_samples(), 1u);
  EXPECT_DOUBLE_EQ(fps.fps_per_env(), 100.0);
  EXPECT_EQ(fps.last_sample().steps, 5u);
  EXPECT_DOUBLE_EQ(fps.last_sample().duration_s, 0.05);
}

TEST(FpsTracker, DebiasedEmaStartsAtTheFirstSampleThenAverages) {
  ManualClock mc;
  FpsTracker fps(0.95, 50ms, 0, mc.clock());
  fps.set_show(false);
  fps.tick(mc.now_ns());
  run(fps, mc, 5, 10.0);  // sample 0: 100 FPS
  run(fps, mc, 5, 10.0);  // sample 1: 100 FPS
  EXPECT_DOUBLE_EQ(fps.fps_per_env(), 100.0);
  run(fps, mc, 3, 20.0);  // sample 2: 3 steps in 60 ms = 50 FPS
  EXPECT_EQ(fps.num_samples(), 3u);
  EXPECT_DOUBLE_EQ(fps.last_sample().sample_fps_per_env, 50.0);
  // Samples of 1, 1 and 1.2 intervals: weights 0.95^2.2, 0.95^1.2 and 1.2 (times 0.05, which
  // cancels). Not the 0.95 * 100 + 0.05 * 50 = 97.5 of an EMA seeded with the first sample.
  const double w0 = std::pow(0.95, 2.2), w1 = std::pow(0.95, 1.2), w2 = 1.2;
  EXPECT_DOUBLE_EQ(fps.fps_per_env(), (w0 * 100 + w1 * 100 + w2 * 50) / (w0 + w1 + w2));
  EXPECT_NEAR(fps.fps_per_env(), 80.22, 0.01);
}

TEST(FpsTracker, DebiasedEmaFollowsARunNotItsFirstSample) {
  // A run that slows from 200 to 62.5 steps/s over 6 samples (the steps of a simulation grow more
  // expensive): the rate lies near the run's throughput (steps over time: 38 steps in 320 ms), a
  // little towards the latest samples, never near the first.
  ManualClock mc;
  FpsTracker fps(0.95, 50ms, 0, mc.clock());
  fps.set_show(false);
  fps.tick(mc.now_ns());
  int steps = 0;
  double ms = 0;
  for (const double rate : {200.0, 160.0, 125.0, 100.0, 80.0, 62.5}) {
    const double dt_ms = 1000.0 / rate;
    const int n = static_cast<int>(std::ceil(50.0 / dt_ms - 1e-9));  // one sample each
    run(fps, mc, n, dt_ms);
    steps += n;
    ms += n * dt_ms;
  }
  ASSERT_EQ(fps.num_samples(), 6u);
  const double throughput = steps / (ms * 1e-3);  // 118.75
  EXPECT_LT(fps.fps_per_env(), throughput);
  EXPECT_NEAR(fps.fps_per_env(), throughput, 0.05 * throughput);  // 114.4; seeded: 178.1
}

TEST(FpsTracker, AShortTailWeighsItsShareOfTime) {
  // A 50 ms sample at 100 FPS, then a run's end flushed 5 ms later after one more step (200 FPS
  // over a tenth of an interval): the tail moves the rate by its share of the time, not by half.
  ManualClock mc;
  FpsTracker fps(0.95, 50ms, 0, mc.clock());
  fps.set_show(false);
  fps.tick(mc.now_ns());
  run(fps, mc, 5, 10.0);
  run(fps, mc, 1, 5.0);
  ASSERT_TRUE(fps.flush());
  const double d = std::pow(0.95, 0.1);
  EXPECT_DOUBLE_EQ(fps.fps_per_env(), (d * 100 + 0.1 * 200) / (d + 0.1));
  EXPECT_NEAR(fps.fps_per_env(), 109.1, 0.1);
}

TEST(FpsTracker, AlphaOneKeepsTheFirstSample) {
  ManualClock mc;
  FpsTracker fps(1.0, 50ms, 0, mc.clock());
  fps.set_show(false);
  fps.tick(mc.now_ns());
  run(fps, mc, 5, 10.0);
  run(fps, mc, 5, 20.0);
  EXPECT_EQ(fps.num_samples(), 2u);
  EXPECT_DOUBLE_EQ(fps.fps_per_env(), 100.0);
}

TEST(FpsTracker, SlowStepsStillMakeOneSamplePerStep) {
  // Steps slower than the interval: every step closes a sample of one step.
  ManualClock mc;
  FpsTracker fps(0.5, 50ms, 0, mc.clock());
  fps.set_show(false);
  fps.tick(mc.now_ns());
  run(fps, mc, 1, 200.0);
  EXPECT_DOUBLE_EQ(fps.fps_per_env(), 5.0);
  run(fps, mc, 1, 100.0);
  EXPECT_DOUBLE_EQ(fps.fps_per_env(), (0.5 * 0.5 * 5.0 + 0.5 * 10.0) / (0.5 * 0.5 + 0.5));
}

TEST(FpsTracker, TotalIsPerEnvTimesEnvs) {
  ManualClock mc;
  FpsTracker fps(0.95, 50ms, 30000, mc.clock());
  fps.set_show(false);
  fps.tick(mc.now_ns());
  run(fps, mc, 5, 10.0);
  EXPECT_DOUBLE_EQ(fps.fps_per_env(), 100.0);
  EXPECT_DOUBLE_EQ(fps.total_fps(), 3'000'000.0);
  EXPECT_EQ(fps.n_envs(), 30000);
  EXPECT_DOUBLE_EQ(fps.last_sample().total_fps, 3'000'000.0);
}

TEST(FpsTracker, LineFormat) {
  EXPECT_EQ(simprof::format_fps_line(43'000'000.0 / 30000.0, 30000),
            "Running at 43,000,000.00 FPS (1,433.33 FPS per env, 30000 envs).");
  EXPECT_EQ(simprof::format_fps_line(1433.333, 0), "Running at 1,433.33 FPS.");
  EXPECT_EQ(simprof::format_fps_line(12.5, 1), "Running at 12.50 FPS (12.50 FPS per env, 1 envs).");
}

TEST(FpsTracker, LineSaysWhenItReadsTheGpuClock) {
  using simprof::FpsClock;
  EXPECT_EQ(simprof::format_fps_line(43'000'000.0 / 30000.0, 30000, FpsClock::kDevice),
            "Running at 43,000,000.00 FPS (1,433.33 FPS per env, 30000 envs, GPU clock).");
  EXPECT_EQ(simprof::format_fps_line(1433.333, 0, FpsClock::kDevice),
            "Running at 1,433.33 FPS (GPU clock).");
  std::ostringstream out;
  ManualClock mc;
  FpsTracker fps(0.95, 50ms, 1024, mc.clock());
  fps.set_logger(capture(out));
  auto claim = fps.claim_device_clock("the test's pacer");
  EXPECT_EQ(fps.clock_kind(), FpsClock::kDevice);
  std::int64_t device_ns = 0;
  fps.tick(device_ns);
  for (int i = 0; i < 500; ++i) fps.tick(device_ns += 100'000);  // 100 us steps: 10,000 FPS
  EXPECT_EQ(out.str(),
            "Running at 10,240,000.00 FPS (10,000.00 FPS per env, 1024 envs, GPU clock).\n");
  EXPECT_EQ(fps.last_sample().clock, FpsClock::kDevice);
  claim.release();  // back to the clock given at construction, the sample in progress gone
  EXPECT_EQ(fps.clock_kind(), FpsClock::kHost);
  fps.tick(mc.now_ns());
  run(fps, mc, 5, 10.0);
  EXPECT_DOUBLE_EQ(fps.last_sample().sample_fps_per_env, 100.0);
}

// The device clock has one owner: a second claimant is refused, naming both, and the first keeps
// it; when the claim goes (or is moved and then goes) the host clock is back.
TEST(FpsTracker, TheDeviceClockHasOneOwner) {
  using simprof::FpsClock;
  ManualClock mc;
  FpsTracker fps(0.95, 50ms, 0, mc.clock());
  {
    auto first = fps.claim_device_clock("pacer A");
    EXPECT_EQ(fps.device_clock_owner(), "pacer A");
    try {
      auto second = fps.claim_device_clock("pacer B");
      ADD_FAILURE() << "a second claimant was let in";
    } catch (const std::logic_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("pacer A"), std::string::npos) << what;
      EXPECT_NE(what.find("pacer B"), std::string::npos) << what;
    }
    EXPECT_EQ(fps.clock_kind(), FpsClock::kDevice) << "the refused claim took nothing";
    auto moved = std::move(first);
    EXPECT_FALSE(first);
    EXPECT_TRUE(moved);
    EXPECT_EQ(fps.clock_kind(), FpsClock::kDevice);
  }
  EXPECT_EQ(fps.clock_kind(), FpsClock::kHost);
  EXPECT_EQ(fps.device_clock_owner(), "");
  auto again = fps.claim_device_clock("pacer B");  // free again
  EXPECT_EQ(fps.device_clock_owner(), "pacer B");
}

// A claim may outlive its tracker: it is then empty, and its end touches nothing.
TEST(FpsTracker, AClaimOutlivesItsTracker) {
  ManualClock mc;
  FpsTracker::DeviceClockClaim claim;
  {
    FpsTracker fps(0.95, 50ms, 0, mc.clock());
    claim = fps.claim_device_clock("pacer");
    EXPECT_TRUE(claim);
  }
  EXPECT_FALSE(claim);
  claim.release();
}

TEST(FpsTracker, FlushCompletesAShortRun) {
  ManualClock mc;
  FpsTracker fps(0.95, 50ms, 0, mc.clock());
  fps.set_show(false);
  EXPECT_FALSE(fps.flush(mc.now_ns()));  // not started
  fps.tick(mc.now_ns());
  EXPECT_FALSE(fps.flush(mc.now_ns()));  // started, nothing counted yet
  run(fps, mc, 3, 4.0);                  // 3 steps in 12 ms: shorter than a sample
  EXPECT_EQ(fps.num_samples(), 0u);
  EXPECT_TRUE(fps.flush(mc.now_ns()));
  EXPECT_EQ(fps.num_samples(), 1u);
  EXPECT_DOUBLE_EQ(fps.fps_per_env(), 250.0);
  EXPECT_FALSE(fps.flush(mc.now_ns()));  // a new sample began at the flush
}

TEST(FpsTracker, ThousandsSeparators) {
  EXPECT_EQ(simprof::format_thousands(0.0), "0.00");
  EXPECT_EQ(simprof::format_thousands(999.999), "1,000.00");
  EXPECT_EQ(simprof::format_thousands(100.0), "100.00");
  EXPECT_EQ(simprof::format_thousands(123456789.5), "123,456,789.50");
  EXPECT_EQ(simprof::format_thousands(-1234.5), "-1,234.50");
  EXPECT_EQ(simprof::format_thousands(1234567.0, 0), "1,234,567");
  EXPECT_EQ(simprof::format_thousands(std::numeric_limits<double>::quiet_NaN()), "nan");
}

TEST(FpsTracker, OneLinePerSampleThroughTheLogger) {
  std::ostringstream out;
  ManualClock mc;
  FpsTracker fps(0.95, 50ms, 30000, mc.clock());
  fps.set_logger(capture(out));
  fps.tick(mc.now_ns());
  run(fps, mc, 4, 10.0);
  EXPECT_EQ(out.str(), "");
  run(fps, mc, 1, 10.0);
  EXPECT_EQ(out.str(), "Running at 3,000,000.00 FPS (100.00 FPS per env, 30000 envs).\n");
  run(fps, mc, 5, 10.0);
  const std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
}

TEST(FpsTracker, ShowFalseStillComputesAndCallsBack) {
  std::ostringstream out;
  ManualClock mc;
  FpsTracker fps(0.95, 50ms, 0, mc.clock());
  fps.set_logger(capture(out));
  fps.set_show(false);
  std::vector<simprof::FpsSample> seen;
  fps.set_callback([&](const simprof::FpsSample& s) { seen.push_back(s); });
  fps.tick(mc.now_ns());
  run(fps, mc, 10, 10.0);
  EXPECT_EQ(out.str(), "");
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].index, 1u);
  EXPECT_DOUBLE_EQ(seen[1].fps_per_env, 100.0);
  // Switched on at run time: the next sample prints.
  fps.set_show(true);
  run(fps, mc, 5, 10.0);
  EXPECT_EQ(out.str(), "Running at 100.00 FPS.\n");
}

TEST(FpsTracker, RestartDropsTheSampleInProgress) {
  ManualClock mc;
  FpsTracker fps(0.95, 50ms, 0, mc.clock());
  fps.set_show(false);
  fps.tick(mc.now_ns());
  run(fps, mc, 4, 10.0);
  fps.restart();
  mc.advance(5.0);  // a pause: must not enter any sample
  fps.tick(mc.now_ns());
  run(fps, mc, 5, 10.0);
  EXPECT_EQ(fps.num_samples(), 1u);
  EXPECT_DOUBLE_EQ(fps.fps_per_env(), 100.0);
}

TEST(FpsTracker, RejectsBadArguments) {
  ManualClock mc;
  EXPECT_THROW(FpsTracker(1.5, 50ms, 0, mc.clock()), std::invalid_argument);
  EXPECT_THROW(FpsTracker(std::nan(""), 50ms, 0, mc.clock()), std::invalid_argument);
  EXPECT_THROW(FpsTracker(0.9, 0ms, 0, mc.clock()), std::invalid_argument);
  EXPECT_THROW(FpsTracker(0.9, 50ms, -1, mc.clock()), std::invalid_argument);
  FpsTracker fps(0.9, 50ms, 0, mc.clock());
  EXPECT_THROW(fps.set_alpha(-0.1), std::invalid_argument);
  fps.set_alpha(0.5);
  EXPECT_DOUBLE_EQ(fps.alpha(), 0.5);
}

TEST(FpsTracker, ProfilerMeasuresTheLoopNotTheCall) {
  // Each step call takes 2 ms, the caller's code between steps 8 ms: the rate is 100, not 500.
  ManualClock mc;
  simprof::ProfilingOptions o;
  o.show_fps = false;
  simprof::StepProfiler prof(o, 0, mc.clock());
  for (int i = 0; i < 11; ++i) {
    {
      auto step = prof.step();
      mc.advance(0.002);
    }
    mc.advance(0.008);
  }
  EXPECT_EQ(prof.fps().num_samples(), 2u);
  EXPECT_DOUBLE_EQ(prof.fps().fps_per_env(), 100.0);
  EXPECT_DOUBLE_EQ(prof.timings().at("period"), 0.010);
  EXPECT_DOUBLE_EQ(prof.timings().at("step"), 0.002);
}

TEST(FpsTracker, ProfilerShowFpsSwitchableAtRunTime) {
  std::ostringstream out;
  ManualClock mc;
  simprof::ProfilingOptions o;
  o.show_fps = false;
  simprof::StepProfiler prof(o, 8, mc.clock());
  prof.fps().set_logger(capture(out));
  auto loop = [&](int n) {
    for (int i = 0; i < n; ++i) {
      auto step = prof.step();
      mc.advance(0.010);
    }
  };
  loop(6);
  EXPECT_EQ(out.str(), "");
  prof.set_show_fps(true);
  loop(5);
  EXPECT_EQ(out.str(), "Running at 800.00 FPS (100.00 FPS per env, 8 envs).\n");
}

TEST(FpsTracker, ResetForgetsTheRateOfAWarmUp) {
  // A slow warm-up (10 steps/s) and then 100 steps/s: with alpha 0.95 the EMA would carry the
  // warm-up for dozens of samples; after reset() the first sample is the rate.
  ManualClock mc;
  FpsTracker fps(0.95, 50ms, 0, mc.clock());
  fps.set_show(false);
  fps.tick(mc.now_ns());
  run(fps, mc, 3, 100.0);
  ASSERT_EQ(fps.num_samples(), 3u);
  fps.reset();
  EXPECT_EQ(fps.num_samples(), 0u);
  EXPECT_TRUE(std::isnan(fps.fps_per_env()));
  fps.tick(mc.now_ns());
  run(fps, mc, 5, 10.0);
  EXPECT_EQ(fps.num_samples(), 1u);
  EXPECT_DOUBLE_EQ(fps.fps_per_env(), 100.0);
  EXPECT_DOUBLE_EQ(fps.last_sample().fps_per_env, 100.0);
}

TEST(FpsTracker, FlushWithoutATimeEndsTheSampleAtTheLastStep) {
  ManualClock mc;
  FpsTracker fps(0.95, 50ms, 0, mc.clock());
  fps.set_show(false);
  EXPECT_FALSE(fps.flush());  // nothing counted yet
  fps.tick(mc.now_ns());
  run(fps, mc, 3, 10.0);  // 3 steps in 30 ms: shorter than a sample
  mc.advance(0.5);        // the run's tear-down: not the loop's time
  EXPECT_TRUE(fps.flush());
  EXPECT_DOUBLE_EQ(fps.fps_per_env(), 100.0);
  EXPECT_FALSE(fps.flush());  // the sample is complete
}

TEST(FpsTracker, SaysItsRankInAMultiProcessRun) {
  std::ostringstream out;
  ManualClock mc;
  FpsTracker fps(0.95, 50ms, 1024, mc.clock());
  fps.set_logger(capture(out));
  fps.set_rank(simprof::RankInfo::explicit_ranks(1, 2));
  fps.tick(mc.now_ns());
  run(fps, mc, 500, 0.1);  // 100 us steps: 10,000 FPS per env
  EXPECT_EQ(out.str(),
            "[rank 1/2] Running at 10,240,000.00 FPS (10,000.00 FPS per env, 1024 envs).\n");
  out.str("");
  fps.set_rank(simprof::RankInfo{});  // one process: no prefix
  run(fps, mc, 500, 0.1);
  EXPECT_EQ(out.str(), "Running at 10,240,000.00 FPS (10,000.00 FPS per env, 1024 envs).\n");
}

TEST(FpsTracker, SampleRatesKeepTheFullSamplesOfOneClockSinceTheReset) {
  ManualClock mc;
  FpsTracker fps(0.95, 50ms, 0, mc.clock());
  fps.set_show(false);
  fps.tick(mc.now_ns());
  run(fps, mc, 5, 10.0);  // 100 steps/s
  run(fps, mc, 10, 5.0);  // 200 steps/s
  run(fps, mc, 2, 5.0);   // a 10 ms tail: flushed, not a full sample
  EXPECT_TRUE(fps.flush());
  EXPECT_EQ(fps.num_samples(), 3u);
  EXPECT_EQ(fps.sample_rates(), (std::vector<double>{100.0, 200.0}));
  fps.reset();  // after a warm-up: its rates go with it
  EXPECT_TRUE(fps.sample_rates().empty());
  fps.tick(mc.now_ns());
  for (std::size_t i = 0; i < FpsTracker::kRateHistory + 3; ++i) run(fps, mc, 1, 50.0);
  const std::vector<double> rates = fps.sample_rates();
  EXPECT_EQ(rates.size(), FpsTracker::kRateHistory);  // the latest, oldest first
  EXPECT_DOUBLE_EQ(rates.front(), 20.0);
  {
    auto claim = fps.claim_device_clock("test");  // another clock: the host's rates go
    EXPECT_TRUE(fps.sample_rates().empty());
  }
}
