// SPDX-License-Identifier: MIT
// `simprof run --gpu` without a GPU: LaunchScopes windows made by hand turned into steps
// (WindowSteps), traces made by hand placed into stages by analyze(), both gathered by the
// DeviceTable; FpsTracker::advance(); and the command line's --gpu.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "device_table.hpp"
#include "run_args.hpp"
#include "simprof/profiler/fps_tracker.hpp"
#include "simprof/trace/analysis.hpp"

namespace {

using simprof::Span;
using simprof::Trace;
constexpr std::int64_t kLoop = 11, kOther = 12;  // thread ids

// Step `n` from `t0` (ns): physics [t0, t0+300us) with physics/contacts inside, sensors after.
// Each stage launches one kernel (correlation `corr`, `corr`+1, ...) that runs `late` ns after
// its launch for the given length; another thread launches one kernel inside physics's span.
void add_step(Trace& t, std::uint64_t n, std::int64_t t0, std::uint32_t corr, std::int64_t late) {
  using simprof::kStepStage;
  t.spans.push_back(Span::cpu_stage("ProfilerStep#" + std::to_string(n), kStepStage, n, t0,
                                    t0 + 400'000, 1, kLoop));
  t.spans.push_back(Span::cpu_stage("physics", 2, n, t0, t0 + 300'000, 1, kLoop));
  t.spans.push_back(
      Span::cpu_stage("physics/contacts", 3, n, t0 + 100'000, t0 + 200'000, 1, kLoop));
  t.spans.push_back(Span::cpu_stage("sensors", 4, n, t0 + 300'000, t0 + 400'000, 1, kLoop));
  const auto launch = [&](std::int64_t at, std::uint32_t c, std::int64_t length, std::int64_t tid) {
    t.spans.push_back(Span::launch("cudaLaunchKernel", at, at + 2'000, 1, tid, c));
    t.spans.push_back(Span::kernel("k", at + late, at + late + length, 0, 7, c));
  };
  launch(t0 + 10'000, corr, 50'000, kLoop);        // physics: 50 us
  launch(t0 + 110'000, corr + 1, 80'000, kLoop);   // physics/contacts: 80 us
  launch(t0 + 310'000, corr + 2, 20'000, kLoop);   // sensors: 20 us
  launch(t0 + 120'000, corr + 3, 90'000, kOther);  // another thread's: not a stage's
}

TEST(StageAnalysis, EachStageGetsTheKernelsLaunchedInsideItOnItsThread) {
  Trace t;
  add_step(t, 4, 0, 1, 1'000'000);  // the GPU 1 ms behind the host: kernels run after the spans
  const simprof::TraceAnalysis a = simprof::analyze(t);
  ASSERT_EQ(a.steps.size(), 1u);
  const simprof::StepAnalysis& s = a.steps[0];
  ASSERT_EQ(s.stages.size(), 3u);
  EXPECT_EQ(s.stages[0].name, "physics");
  EXPECT_EQ(s.stages[0].kernels, 2u);  // its own and contacts's, not the other thread's
  // physics's kernel 1,010-1,060 us, contacts's 1,110-1,190 us: first start to last end.
  EXPECT_DOUBLE_EQ(s.stages[0].gpu_span_us, 180.0);
  EXPECT_EQ(s.stages[1].name, "physics/contacts");
  EXPECT_DOUBLE_EQ(s.stages[1].gpu_span_us, 80.0);
  EXPECT_DOUBLE_EQ(s.stages[2].gpu_span_us, 20.0);
  EXPECT_EQ(s.gpu_begin_ns, 1'010'000);
  EXPECT_EQ(s.gpu_end_ns, 1'330'000);  // sensors's kernel ends last
}

TEST(DeviceTable, RowsFollowTheStagePathsAndPeriodsComeFromConsecutiveSampledSteps) {
  simprof::run::DeviceTable table;
  Trace w1, w2;
  add_step(w1, 10, 0, 1, 1'000'000);
  add_step(w1, 11, 400'000, 10, 1'100'000);  // its device end 100 us later than step 10's + 400
  add_step(w2, 74, 30'000'000, 20, 1'000'000);
  const auto p1 = table.add(simprof::analyze(w1));
  ASSERT_TRUE(p1);
  EXPECT_EQ(p1->steps, 0u);  // the first window only starts the FPS line's clock
  EXPECT_EQ(p1->end_ns, 400'000 + 1'100'000 + 330'000);
  const auto p2 = table.add(simprof::analyze(w2));
  ASSERT_TRUE(p2);
  EXPECT_EQ(p2->steps, 63u);  // steps 12 .. 74 ran between the two device ends
  EXPECT_EQ(p2->end_ns, 30'000'000 + 1'330'000);
  // 63 steps from step 11's device end (1,830 us) to step 74's (31,330 us).
  EXPECT_DOUBLE_EQ(table.steps_per_second(), 63 / 29'500e-6);
  const auto rows = table.rows();
  std::vector<std::string> names;
  for (const auto& r : rows) names.push_back(std::string(2 * r.depth, ' ') + r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"physics", "  physics/contacts", "sensors", "step",
                                             "period"}));
  EXPECT_EQ(table.sampled(), 3u);
  EXPECT_EQ(rows[0].stats.count, 3u);
  EXPECT_DOUBLE_EQ(rows[1].stats.mean, 80e-6);
  EXPECT_DOUBLE_EQ(rows[3].stats.mean, 320e-6);  // step: 1,010 .. 1,330 us
  ASSERT_EQ(rows[4].stats.count, 1u);            // one pair of consecutive sampled steps
  EXPECT_DOUBLE_EQ(rows[4].stats.mean, 500e-6);  // 400 us apart on the host, 100 us more on the GPU
  EXPECT_NEAR(rows[2].share, 100.0 * 20 / 320, 1e-9);
  EXPECT_FALSE(rows[0].partial);
}

TEST(DeviceTable, StepsWithoutKernelsAreLeftOutAndCountedAndTheClockGoesForward) {
  simprof::run::DeviceTable table;
  Trace empty;
  empty.spans.push_back(Span::cpu_stage("ProfilerStep#3", simprof::kStepStage, 3, 0, 10, 1, kLoop));
  EXPECT_FALSE(table.add(simprof::analyze(empty)));
  EXPECT_EQ(table.without_kernels(), 1u);
  EXPECT_TRUE(table.rows().empty());
  Trace w;
  add_step(w, 8, 5'000'000, 1, 1'000'000);
  EXPECT_TRUE(table.add(simprof::analyze(w)));
  EXPECT_FALSE(table.add(simprof::analyze(w))) << "the same device end again is no progress";
  EXPECT_EQ(table.sampled(), 2u);
  table.clear();
  EXPECT_TRUE(table.rows().empty());
  EXPECT_EQ(table.sampled(), 0u);
}

TEST(FpsTracker, AdvanceCountsTheStepsBetweenSampledDeviceEnds) {
  // 100 steps per device millisecond between two windows: 100,000 steps/s.
  const simprof::Clock ns = simprof::Clock::steady();  // ticks are nanoseconds
  simprof::FpsTracker fps(0.0, std::chrono::milliseconds(1), 0, ns);
  fps.set_show(false);
  EXPECT_FALSE(fps.advance(5'000'000, 0));  // starts the clock
  EXPECT_TRUE(fps.advance(6'000'000, 100));
  EXPECT_DOUBLE_EQ(fps.fps_per_env(), 100'000.0);
}

// A window of steps 62 and 63 as LaunchScopes reads it: each step's scope (depth 0) and its
// stages, in device nanoseconds from the window's first event.
simprof::cuda::LaunchWindow window(std::uint64_t tag, std::int64_t step_us, bool previous,
                                   std::int64_t since_us) {
  simprof::cuda::LaunchWindow w;
  w.tag = tag;
  for (std::int64_t k = 0; k < 2; ++k) {
    const std::int64_t t0 = k * step_us * 1000;
    w.scopes.push_back({0, 0, true, t0, t0 + step_us * 1000});     // the step
    w.scopes.push_back({2, 1, true, t0, t0 + 100'000});            // physics: 100 us
    w.scopes.push_back({3, 2, true, t0 + 40'000, t0 + 100'000});   // physics/contacts: 60 us
    w.scopes.push_back({4, 1, false, 0, 0});                       // sensors: launched nothing
    w.scopes.push_back({5, 1, true, t0 + 100'000, t0 + 110'000});  // rewards, run twice:
    w.scopes.push_back({5, 1, true, t0 + 120'000, t0 + 130'000});  // 10 + 10 us
  }
  w.anchored = true;
  w.anchor_ns = 2 * step_us * 1000;
  w.has_previous = previous;
  w.since_previous_ns = since_us * 1000;
  return w;
}

std::string stage_name(std::int32_t id) {
  return id == 2 ? "physics" : id == 3 ? "physics/contacts" : id == 4 ? "sensors" : "rewards";
}

TEST(WindowSteps, ScopesBecomeStepsAndStagesOnOneTimebaseAcrossWindows) {
  simprof::run::WindowSteps steps;
  const simprof::TraceAnalysis a = steps(window(62, 200, false, 0), stage_name);
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[0].step, 62u);
  EXPECT_EQ(a.steps[1].step, 63u);
  EXPECT_DOUBLE_EQ(a.steps[1].gpu_span_us, 200.0);
  EXPECT_EQ(a.steps[1].gpu_end_ns - a.steps[0].gpu_end_ns, 200'000);
  ASSERT_EQ(a.steps[0].stages.size(), 3u);  // sensors launched nothing: no stage
  EXPECT_EQ(a.steps[0].stages[1].name, "physics/contacts");
  EXPECT_DOUBLE_EQ(a.steps[0].stages[1].gpu_span_us, 60.0);
  EXPECT_EQ(a.steps[0].stages[2].name, "rewards");
  EXPECT_DOUBLE_EQ(a.steps[0].stages[2].gpu_span_us, 20.0);
  EXPECT_EQ(a.steps[0].stages[2].kernels, 2u);
  // The next window's last step ends 64 steps of 250 us after this one's (its anchor).
  const simprof::TraceAnalysis b = steps(window(126, 250, true, 64 * 250), stage_name);
  EXPECT_EQ(b.steps[1].gpu_end_ns - a.steps[1].gpu_end_ns, 64 * 250'000);
  simprof::run::DeviceTable table;
  table.add(a);
  const auto p = table.add(b);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->steps, 64u);
  EXPECT_DOUBLE_EQ(table.steps_per_second(), 64 / (64 * 250e-6));
}

TEST(DeviceTable, AStageWhoseParentHasNoRowGoesAtTheTop) {
  simprof::run::DeviceTable table;
  simprof::TraceAnalysis a;
  simprof::StepAnalysis s;
  s.step = 1;
  s.kernels = 1;
  s.gpu_begin_ns = 1000;
  s.gpu_end_ns = 2000;
  s.gpu_span_us = 1.0;
  s.stages.push_back({"fwd/attn", 1, 0.5});  // "fwd" itself never launched
  a.steps.push_back(s);
  table.add(a);
  const auto rows = table.rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "fwd/attn");
  EXPECT_EQ(rows[0].depth, 0);
}

TEST(RunArgs, GpuOptionsAreParsedAndConflictsNamed) {
  std::string error;
  const char* on[] = {"simprof", "run", "--gpu", "--gpu-every", "16", "--", "p"};
  simprof::run::RunArgs a;
  ASSERT_TRUE(simprof::run::parse_run_args(7, on, a, error)) << error;
  EXPECT_EQ(a.gpu, 1);
  EXPECT_EQ(a.gpu_every, 16);
  const char* off[] = {"simprof", "run", "--no-gpu", "--", "p"};
  simprof::run::RunArgs b;
  ASSERT_TRUE(simprof::run::parse_run_args(5, off, b, error)) << error;
  EXPECT_EQ(b.gpu, 0);
  const char* both[] = {"simprof", "run", "--gpu", "--no-gpu", "--", "p"};
  simprof::run::RunArgs c;
  EXPECT_FALSE(simprof::run::parse_run_args(6, both, c, error));
  EXPECT_NE(error.find("--gpu and --no-gpu together"), std::string::npos) << error;
  const char* every[] = {"simprof", "run", "--gpu-every", "1", "--", "p"};
  simprof::run::RunArgs d;
  EXPECT_FALSE(simprof::run::parse_run_args(6, every, d, error));
  EXPECT_NE(error.find("--gpu-every '1' (expected a whole number from 2 to 1000000000)"),
            std::string::npos)
      << error;
  const char* unused[] = {"simprof", "run", "--no-gpu", "--gpu-every", "8", "--", "p"};
  simprof::run::RunArgs e;
  EXPECT_FALSE(simprof::run::parse_run_args(7, unused, e, error));
  EXPECT_NE(error.find("--gpu-every 8 with --no-gpu"), std::string::npos) << error;
}

}  // namespace

// `--gpu-every 8 --gpu-interval 100` on a clock of 1,000 ticks a second: steps 6, 14, 22, ... open
// a window when 100 ms have passed since the last one opened; steps 7, 15, ... close one.
TEST(WindowSchedule, AWindowInEveryNStepsAtMostOneInTheInterval) {
  simprof::run::WindowSchedule s({8, 100}, 1000.0);
  std::vector<std::uint64_t> opened;
  for (std::uint64_t step = 0; step < 64; ++step)
    if (s.opens(step, static_cast<std::int64_t>(step) * 10)) opened.push_back(step);  // 10 ms each
  // 6 at 60 ms; 14 at 140 (80 ms after): no; 22 at 220 ms: yes; 30 no; 38 yes; ...
  EXPECT_EQ(opened, (std::vector<std::uint64_t>{6, 22, 38, 54}));
  EXPECT_TRUE(s.closes(7));
  EXPECT_FALSE(s.closes(6));
  simprof::run::WindowSchedule unbounded({8, 0}, 1000.0);
  std::vector<std::uint64_t> all;
  for (std::uint64_t step = 0; step < 32; ++step)
    if (unbounded.opens(step, 0)) all.push_back(step);
  EXPECT_EQ(all, (std::vector<std::uint64_t>{6, 14, 22, 30})) << "--gpu-interval 0: every one";
}
