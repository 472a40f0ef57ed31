// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "simprof/base/manual_clock.hpp"
#include "simprof/trace/schedule.hpp"
#include "simprof/trace/chrome_json.hpp"
#include "simprof/trace/analysis.hpp"
#include "simprof/trace/session.hpp"

using namespace simprof;
using json = nlohmann::json;

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
ProfilingOptions quiet() {
  ProfilingOptions o;
  o.show_fps = false;
  return o;
}
}  // namespace

TEST(Schedule, MatchesTorchProfilerSchedule) {
  Schedule s{/*wait=*/1, /*warmup=*/1, /*active=*/2, /*repeat=*/2, /*skip_first=*/2};
  using A = ScheduleAction;
  const std::vector<A> want = {A::kNone,   A::kNone,          A::kNone, A::kWarmup,
                               A::kRecord, A::kRecordAndSave, A::kNone, A::kWarmup,
                               A::kRecord, A::kRecordAndSave, A::kNone, A::kNone};
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(s.action(static_cast<std::int64_t>(i)), want[i])
        << i << ": " << to_string(s.action(static_cast<std::int64_t>(i)));
  Schedule forever{0, 0, 1, 0, 0};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(forever.action(i), A::kRecordAndSave);
  Schedule genesis{80, 3, 1, 1, 0};  // the Genesis page's example
  EXPECT_EQ(genesis.action(79), A::kNone);
  EXPECT_EQ(genesis.action(80), A::kWarmup);
  EXPECT_EQ(genesis.action(83), A::kRecordAndSave);
  EXPECT_EQ(genesis.action(84), A::kNone);
}

TEST(Schedule, Validates) {
  EXPECT_THROW((Schedule{0, 0, 0, 1, 0}.validate()), std::invalid_argument);
  EXPECT_THROW((Schedule{-1, 0, 1, 1, 0}.validate()), std::invalid_argument);
  EXPECT_THROW((Schedule{0, 0, 1, -1, 0}.validate()), std::invalid_argument);
  try {
    Schedule{0, -2, 1, 1, 0}.validate();
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("warmup = -2"), std::string::npos) << e.what();
  }
}

TEST(ChromeTrace, EscapesEverythingJsonNeeds) {
  EXPECT_EQ(json_escape("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(json_escape("line\nnext\ttab"), "line\\nnext\\ttab");
  EXPECT_EQ(json_escape(std::string("\x01\x1f", 2)), "\\u0001\\u001f");
  EXPECT_EQ(json_escape("caf\xc3\xa9 \xe6\xa8\xa1"), "caf\xc3\xa9 \xe6\xa8\xa1");  // UTF-8 passes
  EXPECT_EQ(json_escape("bad\xff"), "bad\xef\xbf\xbd");                            // U+FFFD
  Trace t;
  t.events.push_back(
      TraceEvent::complete("k<\"quoted\">\\\n\x02 caf\xc3\xa9", "kernel", 1000, 10, 0, 7));
  const json j = json::parse(to_chrome_json(t));
  EXPECT_EQ(j["traceEvents"][0]["name"], "k<\"quoted\">\\\n\x02 caf\xc3\xa9");
}

TEST(ChromeTrace, FieldsOrderingAndExactMicroseconds) {
  Trace t;
  TraceEvent k = TraceEvent::complete("axpb", "kernel", 2'001'234, 5'678, 0, 13);
  k.args = {{"grid", std::vector<std::int64_t>{4, 1, 1}},
            {"correlation", std::int64_t{42}},
            {"occupancy", 0.5},
            {"nan", std::nan("")},
            {"stream", std::string("13")}};
  t.events.push_back(k);
  t.events.push_back(TraceEvent::complete("physics", "cpu_op", 1'000'000, 3'000'001, 100, 101));
  t.events.push_back(TraceEvent::flow_start(42, 1'500'000, 100, 101));
  t.events.push_back(TraceEvent::flow_end(42, 2'001'234, 0, 13));
  t.events.push_back(TraceEvent::counter("FPS", 1'200'000, 100, {{"total", 1234.5}}));
  t.events.push_back(TraceEvent::process_name(0, "GPU 0"));
  t.events.push_back(TraceEvent::complete("early", "cpu_op", -1'500, 500, 100, 101));
  t.metadata["clock"] = "tsc";
  t.dropped = 3;
  const json j = json::parse(to_chrome_json(t));
  const auto& ev = j["traceEvents"];
  ASSERT_EQ(ev.size(), 7u);
  EXPECT_EQ(ev[0]["ph"], "M");  // metadata first
  EXPECT_EQ(ev[0]["args"]["name"], "GPU 0");
  for (std::size_t i = 2; i < ev.size(); ++i)
    EXPECT_LE(ev[i - 1]["ts"].get<double>(), ev[i]["ts"].get<double>());
  EXPECT_EQ(ev[1]["name"], "early");
  EXPECT_DOUBLE_EQ(ev[1]["ts"].get<double>(), -1.5);
  const auto& kernel = ev[5];  // equal times keep insertion order: the kernel, then its flow end
  EXPECT_EQ(kernel["name"], "axpb");
  EXPECT_EQ(kernel["cat"], "kernel");
  EXPECT_DOUBLE_EQ(kernel["ts"].get<double>(), 2001.234);
  EXPECT_DOUBLE_EQ(kernel["dur"].get<double>(), 5.678);
  EXPECT_EQ(kernel["args"]["grid"], (json::array({4, 1, 1})));
  EXPECT_EQ(kernel["args"]["correlation"], 42);
  EXPECT_TRUE(kernel["args"]["nan"].is_null());
  EXPECT_EQ(kernel["pid"], 0);
  EXPECT_EQ(kernel["tid"], 13);
  const std::string text = to_chrome_json(t);
  EXPECT_NE(text.find("\"ts\": 2001.234, \"dur\": 5.678"), std::string::npos);
  EXPECT_NE(text.find("\"ts\": 1000.000, \"dur\": 3000.001"), std::string::npos);
  const auto& fin = ev[6];
  EXPECT_EQ(fin["ph"], "f");
  EXPECT_EQ(fin["bp"], "e");
  EXPECT_EQ(fin["id"], 42);
  EXPECT_EQ(j["otherData"]["dropped_events"], "3");
  EXPECT_EQ(j["otherData"]["clock"], "tsc");
  EXPECT_EQ(j["displayTimeUnit"], "ns");
}

TEST(ChromeTrace, AtomicWrite) {
  Trace t;
  t.events.push_back(TraceEvent::complete("x", "cpu_op", 0, 1, 1, 1));
  const std::string dir = ::testing::TempDir() + "simprof_trace_test";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/t.json";
  write_chrome_trace(t, path);
  EXPECT_TRUE(json::accept(slurp(path)));
  for (const auto& f : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(f.path().filename(), "t.json") << "a temporary file was left behind";
  std::filesystem::remove_all(dir);
  EXPECT_THROW(write_chrome_trace(t, "/nonexistent-dir/t.json"), std::runtime_error);
}

namespace {
// A source that logs its calls and contributes one event per active window.
struct FakeSource : TraceSource {
  std::vector<std::string> calls;
  void start() override { calls.push_back("start"); }
  void discard() override { calls.push_back("discard"); }
  std::uint64_t stop_and_collect(std::vector<TraceEvent>& out) override {
    calls.push_back("collect");
    out.push_back(TraceEvent::complete("gpu_kernel", "kernel", 0, 1, 0, 7));
    return 2;  // it lost two
  }
};
}  // namespace

TEST(TraceSession, RecordsTheScheduledStepsOnly) {
  ManualClock mc;
  StepProfiler prof(quiet(), 0, mc.clock());
  TraceOptions o;
  o.schedule = Schedule{1, 1, 2, 1, 0};  // step 0 wait, 1 warm-up, 2-3 active
  TraceSession session(prof, o);
  FakeSource src;
  session.add_source(&src);
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
  EXPECT_EQ(src.calls, (std::vector<std::string>{"start", "discard", "collect"}));
  std::vector<std::string> names;
  for (const auto& e : traces[0].events)
    if (e.ph == 'X') names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"physics", "ProfilerStep#2", "physics",
                                             "ProfilerStep#3", "gpu_kernel"}));
  const TraceEvent& phys = traces[0].events[2];
  EXPECT_EQ(phys.ts_ns, 2 * 3500 + 1000);  // step 2 starts at 7 us; physics 1 us later
  EXPECT_EQ(phys.dur_ns, 2000);
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
  for (const auto& f : session.files()) {
    const json j = json::parse(slurp(f));
    EXPECT_EQ(j["traceEvents"][0]["ph"], "M");
    std::remove(f.c_str());
  }
}

namespace {
Trace synthetic(std::int64_t gap_ns, int n_kernels) {
  Trace t;
  TraceEvent step = TraceEvent::complete("ProfilerStep#5", "user_annotation", 0, 1'000'000, 1, 1);
  step.args.emplace_back("step", std::int64_t{5});
  t.events.push_back(step);
  std::int64_t ts = 20'000;
  for (int i = 0; i < n_kernels; ++i) {
    TraceEvent api =
        TraceEvent::complete("cudaLaunchKernel", "cuda_runtime", 1000 + i * 4000, 3000, 1, 1);
    api.args.emplace_back("correlation", std::int64_t{i + 1});
    t.events.push_back(api);
    TraceEvent k = TraceEvent::complete(i % 2 ? "contacts" : "forces", "kernel", ts, 1000, 0, 7);
    k.args.emplace_back("correlation", std::int64_t{i + 1});
    t.events.push_back(k);
    ts += 1000 + gap_ns;
  }
  return t;
}
}  // namespace

TEST(TraceAnalysis, LaunchBoundStepWithAGraphPrediction) {
  const auto a = analyze(synthetic(/*gap_ns=*/3000, 10));
  ASSERT_EQ(a.steps.size(), 1u);
  const auto& s = a.steps[0];
  EXPECT_EQ(s.step, 5u);
  EXPECT_EQ(s.kernels, 10u);
  EXPECT_NEAR(s.gpu_busy_us, 10.0, 1e-9);
  EXPECT_NEAR(s.gpu_span_us, 10.0 + 9 * 3.0, 1e-9);
  EXPECT_NEAR(s.idle_us, 27.0, 1e-9);
  EXPECT_NEAR(s.max_gap_us, 3.0, 1e-9);
  EXPECT_TRUE(s.launch_bound);
  EXPECT_NEAR(s.predicted_graph_us, 10.0 + 10 * 0.51, 1e-9);
  EXPECT_TRUE(a.launch_bound);
  EXPECT_EQ(a.verdict.rfind("launch-bound", 0), 0u) << a.verdict;
  EXPECT_NEAR(s.launch_latency_p50_us, 19.0 + 4.5 * (4.0 - 1.0) - 0.0, 100.0);  // positive, sane
  ASSERT_EQ(a.kernels.size(), 2u);
  EXPECT_EQ(a.kernels[0].calls, 5u);
  EXPECT_NEAR(a.kernels[0].share, 0.5, 1e-12);
  EXPECT_NE(a.report().find("forces"), std::string::npos);
}

TEST(TraceAnalysis, GpuBoundStepNamesTheTopKernels) {
  const auto a = analyze(synthetic(/*gap_ns=*/100, 6));
  EXPECT_FALSE(a.launch_bound);
  EXPECT_EQ(a.verdict.rfind("GPU-bound", 0), 0u) << a.verdict;
  EXPECT_NE(a.verdict.find("forces (50%)"), std::string::npos) << a.verdict;
  EXPECT_EQ(analyze(Trace{}).verdict.rfind("no kernels", 0), 0u);
}
