// SPDX-License-Identifier: MIT
// `simprof run`'s ranges to steps and stages, on an injected clock: the step range (asked for or
// chosen), stages by path, other threads, unbalanced pops, and what the report says.
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "launch_preload.hpp"
#include "range_fixture.hpp"
#include "range_record.hpp"
#include "range_report.hpp"
#include "range_spans.hpp"
#include "range_steps.hpp"
#include "run_args.hpp"
#include "simprof/base/manual_clock.hpp"
#include "simprof/profiler/step_profiler.hpp"

using simprof::ManualClock;
using simprof::StepProfiler;
using simprof::run::RangeSteps;
using simprof::run::testing::Fixture;
using Json = nlohmann::ordered_json;

namespace {

// One step of `name` on thread 1: physics 3 us (contacts 1 us inside it), sensors/Imu 2 us.
void step(RangeSteps& r, ManualClock& c, const char* name = "step") {
  r.push(1, name);
  r.push(1, "physics");
  c.advance_ns(1000);
  r.push(1, "contacts");
  c.advance_ns(1000);
  r.pop(1);
  c.advance_ns(1000);
  r.pop(1);
  r.push(1, "sensors");
  r.push(1, "Imu");
  c.advance_ns(2000);
  r.pop(1);
  r.pop(1);
  c.advance_ns(500);
  r.pop(1);
}

}  // namespace

TEST(RangeSteps, TheNamedRangeIsAStepAndItsNestedRangesAreStagesByPath) {
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  for (int i = 0; i < 5; ++i) step(r, f.clock);
  EXPECT_EQ(f.prof.steps(), 5u);
  EXPECT_EQ(r.step_name(), "step");
  EXPECT_EQ(f.prof.stats("physics").count, 5u);
  EXPECT_DOUBLE_EQ(f.prof.stats("physics").mean, 3e-6);
  EXPECT_DOUBLE_EQ(f.prof.stats("physics/contacts").mean, 1e-6);
  EXPECT_DOUBLE_EQ(f.prof.stats("sensors/Imu").mean, 2e-6);
  EXPECT_DOUBLE_EQ(f.prof.stats("step").mean, 5.5e-6);
  EXPECT_EQ(r.counts().unmatched_pops, 0u);
  EXPECT_EQ(r.open_at_end(), 0u);
}

TEST(RangeSteps, ARangeNamedByItsPathKeepsItsName) {
  // simprof's own NvtxRanges (and programs like it) name a nested range by its whole path.
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  for (int i = 0; i < 3; ++i) {
    r.push(1, "step");
    r.push(1, "physics");
    r.push(1, "physics/contacts");
    f.clock.advance_ns(1000);
    r.pop(1);
    r.push(1, "physicsx");  // a longer name is not a path below "physics"
    r.pop(1);
    r.pop(1);
    r.pop(1);
  }
  EXPECT_EQ(f.prof.stats("physics/contacts").count, 3u);
  EXPECT_THROW(f.prof.stats("physics/physics/contacts"), std::invalid_argument);
  EXPECT_EQ(f.prof.stats("physics/physicsx").count, 3u);
}

TEST(RangeSteps, TheOutermostRangeThatRepeatsIsChosenAndItsFirstRunIsLeftOut) {
  Fixture f;
  RangeSteps r(f.prof, {});
  r.push(1, "setup");  // once: never a step
  r.pop(1);
  r.push(1, "train");  // open around every step: does not repeat
  for (int i = 0; i < 4; ++i) step(r, f.clock);
  r.pop(1);
  EXPECT_EQ(r.step_name(), "step");
  EXPECT_EQ(f.prof.steps(), 3u) << "the first run of a range is before it repeats";
  EXPECT_EQ(r.counts().step_changes, 0u);
}

TEST(RangeSteps, ASubstepThatRepeatsFirstGivesWayToTheShallowerStep) {
  Fixture f;
  RangeSteps r(f.prof, {});
  for (int i = 0; i < 4; ++i) {
    r.push(1, "step");
    for (int k = 0; k < 2; ++k) {  // physics repeats inside the first step, before step does
      r.push(1, "substep");
      f.clock.advance_ns(1000);
      r.pop(1);
    }
    r.pop(1);
  }
  EXPECT_EQ(r.step_name(), "step");
  EXPECT_EQ(r.counts().step_changes, 1u);
  EXPECT_EQ(r.steps(), 3u) << "counted from the change: the substep's step is not one";
  EXPECT_EQ(f.prof.stats("substep").count, 3u) << "counted once per step, both runs summed";
  EXPECT_DOUBLE_EQ(f.prof.stats("substep").mean, 2e-6);
}

// Threads racing to repeat: the main thread's range takes over from another thread's that repeated
// first (with ranges inside it, however long that choice stood: past the learning steps here), and
// keeps the choice when it repeated first. A main thread's leaf range (a checkpoint) does not take
// a long-standing choice.
TEST(RangeSteps, TheMainThreadsRangeIsTheStepWhenThreadsRace) {
  for (const bool loader_first : {true, false}) {
    Fixture f;
    RangeSteps r(f.prof, {"", /*main_thread=*/1});
    const auto load = [&] {
      r.push(2, "load");
      r.push(2, "decode");
      f.clock.advance_ns(100);
      r.pop(2);
      r.pop(2);
    };
    if (loader_first)
      for (int i = 0; i < 100; ++i) load();
    EXPECT_EQ(r.step_name(), loader_first ? "load" : "") << loader_first;
    for (int i = 0; i < 4; ++i) {
      step(r, f.clock);
      load();
    }
    EXPECT_EQ(r.step_name(), "step") << loader_first;
    EXPECT_EQ(r.counts().step_changes, loader_first ? 1u : 0u) << loader_first;
    if (loader_first) {
      EXPECT_STREQ(r.change_why(), "the main thread's range");
    }
    EXPECT_EQ(r.steps(), 3u) << loader_first;
    EXPECT_EQ(f.prof.stats("physics").count, 3u) << "counted from the change";
    EXPECT_GE(r.counts().other_threads, 6u) << "the loader's ranges are no stage";
  }
  Fixture f;
  RangeSteps r(f.prof, {"", /*main_thread=*/1});
  for (int i = 0; i < 100; ++i) {
    r.push(2, "decode");
    r.push(2, "x");
    f.clock.advance_ns(100);
    r.pop(2);
    r.pop(2);
    if (i % 40 == 39) {  // a checkpoint on the main thread, twice
      r.push(1, "save");
      r.pop(1);
    }
  }
  EXPECT_EQ(r.step_name(), "decode");
  EXPECT_EQ(r.counts().step_changes, 0u);
}

// The choice stands once --step named it, or after kLearningSteps steps of it: until then a
// shallower range may take over, and `simprof run` starts its device side only where no range of
// the program is open.
TEST(RangeSteps, AChoiceSettlesWhenNamedOrAfterTheLearningSteps) {
  Fixture f;
  RangeSteps named(f.prof, {"step"});
  EXPECT_TRUE(named.settled());
  Fixture g;
  RangeSteps learned(g.prof, {});
  EXPECT_FALSE(learned.settled());
  for (std::uint64_t i = 0; i <= RangeSteps::kLearningSteps; ++i) {
    EXPECT_FALSE(learned.settled()) << "after " << learned.steps() << " steps";
    step(learned, g.clock);
  }
  EXPECT_EQ(learned.steps(), RangeSteps::kLearningSteps);
  EXPECT_TRUE(learned.settled());
}

// Where `simprof run` may start its device side: a push of the chosen step range between steps.
// A substage chosen first (it repeats inside the first step) is not a boundary while young: the
// start would land inside the program's step.
TEST(RangeSteps, AStepBoundaryIsTheStepRangesPushWithNothingOpenWhileYoung) {
  Fixture f;
  RangeSteps r(f.prof, {});
  r.push(1, "step");
  r.push(1, "substep");
  r.pop(1);
  EXPECT_FALSE(r.at_step_boundary(1, "substep")) << "nothing chosen yet";
  r.push(1, "substep");  // repeats: chosen, though "step" is open around it
  r.pop(1);
  ASSERT_EQ(r.step_name(), "substep");
  EXPECT_FALSE(r.at_step_boundary(1, "substep")) << "inside the program's step";
  r.pop(1);
  EXPECT_FALSE(r.at_step_boundary(1, "physics")) << "not the step range";
  EXPECT_FALSE(r.at_step_boundary(2, "substep")) << "not the step's thread";
  r.push(1, "step");  // repeats at depth 0: takes over
  ASSERT_EQ(r.step_name(), "step");
  EXPECT_FALSE(r.at_step_boundary(1, "step")) << "in a step";
  r.pop(1);
  EXPECT_TRUE(r.at_step_boundary(1, "step"));
  // Named by --step, a step range inside an outer one is a boundary at once.
  Fixture g;
  RangeSteps named(g.prof, {"step"});
  named.push(1, "train");
  named.push(1, "step");
  named.pop(1);
  EXPECT_TRUE(named.at_step_boundary(1, "step"));
}

TEST(RangeSteps, RangesOnOtherThreadsAreCountedNotStages) {
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  step(r, f.clock);
  r.push(2, "loader");
  r.pop(2);
  step(r, f.clock);
  EXPECT_EQ(f.prof.steps(), 2u);
  EXPECT_EQ(r.counts().other_threads, 1u);
  EXPECT_EQ(f.prof.find_stage("loader"), simprof::kNoStage);
  EXPECT_EQ(r.threads(), 2u);
  const std::string report = simprof::run::range_report(f.prof, r, "step");
  EXPECT_NE(report.find("1 ranges on 1 other threads are not stages"), std::string::npos) << report;
}

// Ranges that are no stage (another thread's, one between steps) reach on_range() with their times,
// for the trace's thread tracks; stages and the step do not.
TEST(RangeSteps, RangesThatAreNoStageReachOnRangeWithTheirTimes) {
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  std::vector<std::tuple<std::uint64_t, std::string, std::int64_t, std::int64_t>> seen;
  r.on_range([&](std::uint64_t thread, std::string_view name, std::int64_t b, std::int64_t e) {
    seen.emplace_back(thread, std::string(name), b, e);
  });
  const std::int64_t t0 = f.prof.clock().now();
  r.push(1, "setup");
  f.clock.advance_ns(700);
  r.pop(1);
  step(r, f.clock);  // 5.5 us
  r.push(2, "loader");
  r.push(2, "decode");
  f.clock.advance_ns(300);
  r.pop(2);
  const std::uint64_t id = 2ull << 40 | 1;
  r.push(2, "upload", 0, id);  // a started range, ended after "loader"
  f.clock.advance_ns(100);
  r.pop(2);
  f.clock.advance_ns(400);
  r.end(2, id);
  step(r, f.clock);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0], std::make_tuple(1u, std::string("setup"), t0, t0 + 700));
  EXPECT_EQ(seen[1], std::make_tuple(2u, std::string("decode"), t0 + 6200, t0 + 6500));
  EXPECT_EQ(seen[2], std::make_tuple(2u, std::string("loader"), t0 + 6200, t0 + 6600));
  // "loader" closed while "upload", started after it, was open: "upload" ended with it for the
  // steps, and its span is its own, to its real end.
  EXPECT_EQ(seen[3], std::make_tuple(2u, std::string("upload"), t0 + 6500, t0 + 7000));
  EXPECT_EQ(f.prof.steps(), 2u);
}

// The trace source of those ranges: only what closes while a window records, at most `most` (the
// rest counted as lost), each on its thread's track in the session's nanoseconds.
TEST(RangeSpans, KeepsTheWindowsRangesUpToItsLimit) {
  simprof::run::RangeSpans spans(2);
  spans.bind(simprof::TimeBase(simprof::Clock::steady()));
  spans.add(7, "before", 0, 1);  // no window yet
  spans.start();
  spans.add(7, "decode", 1000, 3000);
  spans.add(8, "parse", 2000, 2500);
  spans.add(8, "third", 2600, 2700);  // past the limit
  std::vector<simprof::Span> out;
  EXPECT_EQ(spans.stop_and_collect(out), 1u);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].kind, simprof::SpanKind::kRange);
  EXPECT_EQ(out[0].name, "decode");
  EXPECT_EQ(out[0].tid, 7);
  EXPECT_EQ(out[1].tid, 8);
  EXPECT_EQ(out[1].duration_ns(), simprof::TimeBase(simprof::Clock::steady()).to_ns(500));
  spans.add(7, "after", 4000, 5000);  // the window is over
  out.clear();
  spans.start();
  EXPECT_EQ(spans.stop_and_collect(out), 0u);
  EXPECT_TRUE(out.empty());
}

TEST(RangeSteps, UnbalancedPopsAndRangesOpenAtTheEndAreSaid) {
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  r.pop(1);
  step(r, f.clock);
  r.push(1, "step");
  r.push(1, "physics");
  r.finish();  // the program ended inside a step: not counted
  EXPECT_EQ(f.prof.steps(), 1u);
  EXPECT_EQ(r.counts().unmatched_pops, 1u);
  EXPECT_EQ(r.open_at_end(), 2u);
  const std::string report = simprof::run::range_report(f.prof, r, "step");
  EXPECT_NE(report.find("1 pops (or ends) had no such range open"), std::string::npos) << report;
  EXPECT_NE(report.find("2 ranges were still open at the end"), std::string::npos) << report;
  EXPECT_NE(report.find("1 steps of the NVTX range \"step\""), std::string::npos) << report;
}

TEST(RangeSteps, AStepNameNeverPushedIsSaidWithTheRangesSeen) {
  Fixture f;
  RangeSteps r(f.prof, {"frame"});
  for (int i = 0; i < 3; ++i) step(r, f.clock);
  EXPECT_EQ(f.prof.steps(), 0u);
  const std::string report = simprof::run::range_report(f.prof, r, "frame");
  EXPECT_NE(report.find("--step frame: no range of that name was pushed. Ranges seen: "
                        "\"Imu\" (3), \"contacts\" (3)"),
            std::string::npos)
      << report;
}

TEST(RangeSteps, NoRangesAndNoRepeatsAreSaid) {
  Fixture f;
  RangeSteps r(f.prof, {});
  EXPECT_NE(simprof::run::range_report(f.prof, r, "").find("pushed no NVTX ranges"),
            std::string::npos);
  r.push(1, "main");
  r.pop(1);
  EXPECT_NE(simprof::run::range_report(f.prof, r, "").find("no range repeated"), std::string::npos);
}

TEST(RangeSteps, AStageNameTheProfilerRefusesIsLeftOutAndSaid) {
  Fixture f;
  RangeSteps r(f.prof, {"step"});
  for (int i = 0; i < 2; ++i) {
    r.push(1, "step");
    r.push(1, "period");  // reserved by the profiler
    r.pop(1);
    r.pop(1);
  }
  EXPECT_EQ(f.prof.steps(), 2u);
  EXPECT_EQ(r.counts().left_out, 2u);
  EXPECT_NE(simprof::run::range_report(f.prof, r, "step").find("is reserved"), std::string::npos);
}

TEST(RunArgs, OptionsAreParsedAndBadValuesNamed) {
  simprof::run::RunArgs a;
  std::string error;
  const char* ok[] = {"simprof", "run",      "--step", "step", "--n-envs",
                      "4096",    "--no-fps", "--",     "prog", "--x"};
  ASSERT_TRUE(simprof::run::parse_run_args(10, ok, a, error)) << error;
  EXPECT_EQ(a.step, "step");
  EXPECT_EQ(a.n_envs, 4096);
  EXPECT_FALSE(a.fps);
  EXPECT_EQ(a.command, (std::vector<std::string>{"prog", "--x"}));
  const char* bad[] = {"simprof", "run", "--n-envs", "lots", "--", "prog"};
  simprof::run::RunArgs b;
  EXPECT_FALSE(simprof::run::parse_run_args(6, bad, b, error));
  EXPECT_NE(error.find("--n-envs 'lots' (expected a whole number >= 0)"), std::string::npos);
  const char* none[] = {"simprof", "run", "--step", "s"};
  simprof::run::RunArgs c;
  EXPECT_FALSE(simprof::run::parse_run_args(4, none, c, error));
  EXPECT_NE(error.find("no command to run"), std::string::npos);
  const char* trace[] = {"simprof", "run", "--trace-steps", "5:15", "--", "p"};
  simprof::run::RunArgs t;
  ASSERT_TRUE(simprof::run::parse_run_args(6, trace, t, error)) << error;
  EXPECT_EQ(t.trace_from, 5);
  EXPECT_EQ(t.trace_to, 15);
  for (const char* v : {"5", "5:5", ":3", "3:", "a:b", "-1:4", "2:3x"}) {
    const char* bad_trace[] = {"simprof", "run", "--trace-steps", v, "--", "p"};
    simprof::run::RunArgs b2;
    EXPECT_FALSE(simprof::run::parse_run_args(6, bad_trace, b2, error)) << v;
    EXPECT_NE(error.find("(expected A:B, whole numbers, 0 <= A < B)"), std::string::npos) << v;
  }
  const char* interval[] = {"simprof", "run", "--gpu-interval", "0", "--", "p"};
  simprof::run::RunArgs iv;
  ASSERT_TRUE(simprof::run::parse_run_args(6, interval, iv, error)) << error;
  EXPECT_EQ(iv.gpu_interval_ms, 0);
  for (const char* v : {"-1", "3600001", "10ms"}) {
    const char* bad_interval[] = {"simprof", "run", "--gpu-interval", v, "--", "p"};
    simprof::run::RunArgs b3;
    EXPECT_FALSE(simprof::run::parse_run_args(6, bad_interval, b3, error)) << v;
    EXPECT_NE(error.find(std::string("--gpu-interval '") + v + "' (expected milliseconds"),
              std::string::npos)
        << error;
  }
  const char* off[] = {"simprof", "run", "--no-gpu", "--gpu-interval", "5", "--", "p"};
  simprof::run::RunArgs o;
  EXPECT_FALSE(simprof::run::parse_run_args(7, off, o, error));
  EXPECT_NE(error.find("--gpu-interval 5 with --no-gpu"), std::string::npos) << error;
  const char* unknown[] = {"simprof", "run", "--stpe", "s", "--", "p"};
  simprof::run::RunArgs d;
  EXPECT_FALSE(simprof::run::parse_run_args(6, unknown, d, error));
  EXPECT_NE(error.find("unknown option '--stpe'"), std::string::npos);
}

TEST(RunArgs, GpuLaunchesIsAutoHookOrCuptiAndNeedsTheGpu) {
  using simprof::cuda::LaunchSource;
  std::string error;
  const char* plain[] = {"simprof", "run", "--", "p"};
  simprof::run::RunArgs d;
  ASSERT_TRUE(simprof::run::parse_run_args(4, plain, d, error)) << error;
  EXPECT_FALSE(d.launches_set);
  EXPECT_EQ(d.launches, LaunchSource::kAuto);
  const std::pair<const char*, LaunchSource> names[] = {{"auto", LaunchSource::kAuto},
                                                        {"hook", LaunchSource::kHook},
                                                        {"cupti", LaunchSource::kCupti}};
  for (const auto& [v, source] : names) {
    const char* line[] = {"simprof", "run", "--gpu-launches", v, "--", "p"};
    simprof::run::RunArgs a;
    ASSERT_TRUE(simprof::run::parse_run_args(6, line, a, error)) << error;
    EXPECT_TRUE(a.launches_set);
    EXPECT_EQ(a.launches, source) << v;
    EXPECT_STREQ(simprof::run::launches_name(a.launches), v);
  }
  const char* bad[] = {"simprof", "run", "--gpu-launches", "driver", "--", "p"};
  simprof::run::RunArgs b;
  EXPECT_FALSE(simprof::run::parse_run_args(6, bad, b, error));
  EXPECT_NE(error.find("--gpu-launches 'driver' (expected auto, hook or cupti)"), std::string::npos)
      << error;
  const char* off[] = {"simprof", "run", "--no-gpu", "--gpu-launches", "hook", "--", "p"};
  simprof::run::RunArgs o;
  EXPECT_FALSE(simprof::run::parse_run_args(7, off, o, error));
  EXPECT_NE(error.find("--gpu-launches with --no-gpu"), std::string::npos) << error;
}

TEST(RangeRecord, TheRecordHoldsTheStepsStagesAndCounts) {
  Fixture f;
  RangeSteps r(f.prof, {});
  for (int i = 0; i < 4; ++i) step(r, f.clock);
  r.pop(1);  // unbalanced
  const auto doc = simprof::run::range_record(f.prof, r, "", "prog 4", true);
  EXPECT_EQ(doc["schema"], "simprof.run/2");
  EXPECT_EQ(doc["steps"], 3);
  EXPECT_EQ(doc["step_range"], "step");
  EXPECT_EQ(doc["step_chosen_by"], "the outermost range that repeats");
  EXPECT_EQ(doc["counts"]["unmatched_pops"], 1);
  EXPECT_EQ(doc["provenance"]["command"], "prog 4");
  ASSERT_EQ(doc["stages"].size(),
            6u);  // physics, physics/contacts, sensors, sensors/Imu, step, period
  EXPECT_EQ(doc["stages"][3]["stage"], "sensors/Imu");
  EXPECT_EQ(doc["stages"][0]["stage"], "physics");
  EXPECT_DOUBLE_EQ(doc["stages"][0]["p50_s"].get<double>(), 3e-6);
  EXPECT_EQ(doc["ranges_seen"]["contacts"], 4);
  // What simprof compare reads: the workload, each stage's samples, the FPS line's rates.
  EXPECT_EQ(doc["workload"], Json({{"step_range", "step"}, {"n_envs", f.prof.n_envs()}}));
  EXPECT_EQ(doc["stages"][0]["samples_s"].size(), 3u);
  EXPECT_TRUE(doc["fps"]["rates_per_env"].is_array());
}

// A program linked to a sanitizer's runtime that must be loaded first gets no preloaded hook: its
// file names the runtime (an ELF's dynamic strings); a script, or another ELF, names none.
TEST(LaunchPreload, AProgramLinkingASanitizerRuntimeIsSeen) {
  const std::string dir = ::testing::TempDir();
  const auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir + name, std::ios::binary) << bytes;
    return dir + name;
  };
  const std::string elf(
      "\x7f"
      "ELF\x02\x01\x01",
      7);
  EXPECT_EQ(simprof::run::first_loaded_runtime(write("asan", elf + "..libasan.so.8..libc.so.6")),
            "libasan.so");
  EXPECT_EQ(simprof::run::first_loaded_runtime(write("tsan", elf + "..libtsan.so.2..")),
            "libtsan.so");
  EXPECT_EQ(simprof::run::first_loaded_runtime(write("plain", elf + "..libc.so.6..")), "");
  EXPECT_EQ(simprof::run::first_loaded_runtime(write("script", "#!/bin/sh\n# libasan.so\n")), "");
  EXPECT_EQ(simprof::run::first_loaded_runtime(dir + "missing"), "");
  EXPECT_EQ(simprof::run::first_loaded_runtime("sh"), "");  // found on PATH: no runtime
}
