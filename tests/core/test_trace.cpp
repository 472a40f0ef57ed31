// SPDX-License-Identifier: MIT
// The trace's pieces: the schedule, the Chrome JSON writer, the time base and the analysis of a
// trace. The session that records them: test_trace_session.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "kineto_contract.hpp"
#include "simprof/base/manual_clock.hpp"
#include "simprof/trace/analysis.hpp"
#include "simprof/trace/chrome_json.hpp"
#include "simprof/trace/schedule.hpp"
#include "simprof/trace/span.hpp"
#include "simprof/trace/time_base.hpp"
#include "test_util.hpp"

using namespace simprof;
using json = nlohmann::json;

using simprof::testing::slurp;

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
  // Not JSON-parsable UTF-8 either (the fuzz test found these): a surrogate, an overlong form, a
  // code point past U+10FFFF: U+FFFD for each byte.
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(json_escape("\xed\xa0\x80"), fffd + fffd + fffd);
  EXPECT_EQ(json_escape("\xe0\x80\x80"), fffd + fffd + fffd);
  EXPECT_EQ(json_escape("\xf4\x90\x80\x80"), fffd + fffd + fffd + fffd);
  Trace t;
  t.spans.push_back(
      Span::kernel("k<\"quoted\">\\\n\x02 caf\xc3\xa9", 1000, 1010, /*device=*/0, /*stream=*/7, 1));
  const json j = json::parse(to_chrome_json(t));
  const auto& ev = j["traceEvents"];
  ASSERT_EQ(ev.size(), 6u);  // the device's name, label and order, the stream's two, the kernel
  EXPECT_EQ(ev[5]["name"], "k<\"quoted\">\\\n\x02 caf\xc3\xa9");
}

TEST(ChromeTrace, FieldsOrderingAndExactMicroseconds) {
  Trace t;
  Span k = Span::kernel("axpb", 2'001'234, 2'006'912, /*device=*/0, /*stream=*/13, 42);
  k.get<KernelPayload>().grid = Dim3{4, 1, 1};
  k.get<KernelPayload>().block = Dim3{256, 1, 1};
  t.spans.push_back(k);
  t.spans.push_back(Span::cpu_stage("physics", 2, 0, 1'000'000, 4'000'001, 100, 101));
  t.spans.push_back(Span::flow(42, 1'500'000, 100, 101, 2'001'234, 0, 13));
  t.spans.push_back(Span::counter("FPS", 1'200'000, 100, 1234.5));
  t.spans.push_back(Span::counter("FPS", 1'300'000, 100, std::nan("")));
  t.spans.push_back(Span::cpu_stage("early", 3, 0, -1'500, -1'000, 100, 101));
  t.metadata["clock"] = "tsc";
  t.dropped = 3;
  const json j = json::parse(to_chrome_json(t));
  const auto& ev = j["traceEvents"];
  // Metadata first, as Kineto writes it: the host process (name, label "CPU", sort index) and the
  // loop thread (name, sort index), GPU 0 (name, label "GPU 0", sort index) and its stream; then 7
  // events by time (the flow is two: its start and its end).
  constexpr std::size_t kMeta = 3 + 2 + 3 + 2;
  ASSERT_EQ(ev.size(), kMeta + 7u);
  for (std::size_t i = 0; i < kMeta; ++i) EXPECT_EQ(ev[i]["ph"], "M") << i;
  EXPECT_EQ(ev[0]["name"], "process_name");
  EXPECT_EQ(ev[0]["args"]["name"], "simprof");
  EXPECT_EQ(ev[1]["args"]["labels"], "CPU");
  EXPECT_EQ(ev[2]["args"]["sort_index"], 100);
  EXPECT_EQ(ev[3]["args"]["name"], "thread 101");  // no step on it: not the steps' thread
  EXPECT_EQ(ev[4]["args"]["sort_index"], 101);
  EXPECT_EQ(ev[6]["args"]["labels"], "GPU 0");
  EXPECT_EQ(ev[7]["args"]["sort_index"], 5000000);
  EXPECT_EQ(ev[8]["args"]["name"], "stream 13");
  EXPECT_EQ(ev[8]["pid"], 0);
  EXPECT_EQ(ev[8]["tid"], 13);
  for (std::size_t i = kMeta + 1; i < ev.size(); ++i)
    EXPECT_LE(ev[i - 1]["ts"].get<double>(), ev[i]["ts"].get<double>());
  const auto* e = &ev[kMeta];
  EXPECT_EQ(e[0]["name"], "early");
  EXPECT_DOUBLE_EQ(e[0]["ts"].get<double>(), -1.5);
  EXPECT_EQ(e[1]["name"], "physics");
  EXPECT_EQ(e[1]["cat"], "cpu_op");
  EXPECT_EQ(e[1]["args"]["step"], 0);
  EXPECT_FALSE(e[1]["args"].contains("stream"));  // a host event never carries a stream
  EXPECT_EQ(e[2]["ph"], "C");
  EXPECT_EQ(e[2]["args"]["value"], 1234.5);
  EXPECT_TRUE(e[3]["args"]["value"].is_null());  // JSON has no NaN
  EXPECT_EQ(e[4]["ph"], "s");
  EXPECT_EQ(e[4]["name"], "ac2g");
  EXPECT_EQ(e[4]["pid"], 100);
  EXPECT_EQ(e[4]["tid"], 101);
  const auto& kernel = e[5];  // equal times keep the spans' order: the kernel, then its flow end
  EXPECT_EQ(kernel["name"], "axpb");
  EXPECT_EQ(kernel["cat"], "kernel");
  EXPECT_DOUBLE_EQ(kernel["ts"].get<double>(), 2001.234);
  EXPECT_DOUBLE_EQ(kernel["dur"].get<double>(), 5.678);
  EXPECT_EQ(kernel["args"]["grid"], (json::array({4, 1, 1})));
  EXPECT_EQ(kernel["args"]["block"], (json::array({256, 1, 1})));
  EXPECT_EQ(kernel["args"]["correlation"], 42);
  EXPECT_EQ(kernel["args"]["device"], 0);
  EXPECT_EQ(kernel["args"]["stream"], 13);
  EXPECT_FALSE(kernel["args"].contains("graph id"));  // not a graph's kernel
  EXPECT_EQ(kernel["pid"], 0);
  EXPECT_EQ(kernel["tid"], 13);
  const std::string text = to_chrome_json(t);
  EXPECT_NE(text.find("\"ts\": 2001.234, \"dur\": 5.678"), std::string::npos);
  EXPECT_NE(text.find("\"ts\": 1000.000, \"dur\": 3000.001"), std::string::npos);
  const auto& fin = e[6];
  EXPECT_EQ(fin["ph"], "f");
  EXPECT_EQ(fin["cat"], "ac2g");
  EXPECT_EQ(fin["bp"], "e");
  EXPECT_EQ(fin["id"], 42);
  EXPECT_EQ(fin["pid"], 0);
  EXPECT_EQ(fin["tid"], 13);
  EXPECT_EQ(j["otherData"]["dropped_events"], "3");
  EXPECT_EQ(j["otherData"]["clock"], "tsc");
  EXPECT_EQ(j["displayTimeUnit"], "ns");
}

TEST(ChromeTrace, EachKindWritesItsTypedFields) {
  Trace t;
  Span g = Span::kernel("graph 7", 0, 100, 1, 5, 9);  // graph-launch mode: kernels merged
  g.get<KernelPayload>().graph_id = 7;
  g.get<KernelPayload>().kernels = 16;
  t.spans.push_back(g);
  Span n = Span::kernel("node", 200, 300, 1, 5, 10);
  KernelPayload& np = n.get<KernelPayload>();
  np.grid = Dim3{2, 1, 1};
  np.block = Dim3{32, 1, 1};
  np.graph_id = 7;
  np.graph_node_id = 3;
  np.stage = "physics/integrate";
  t.spans.push_back(n);
  t.spans.push_back(Span::memcpy(CopyKind::kDtoH, 4096, 400, 500, 1, 5, 11));
  t.spans.push_back(Span::memset(64, 600, 700, 1, 5, 12));
  t.spans.push_back(Span::launch("cudaGraphLaunch", 50, 60, 100, 101, 9, CallPayload{311}));
  t.spans.push_back(Span::synchronization(SyncKind::kStream, 800, 900, 1, 5, 13));
  t.spans.push_back(
      Span::launch("cuLaunchKernelEx", 70, 80, 100, 101, 10, CallPayload{0, LaunchApi::kDriver}));
  t.spans.push_back(Span::overhead("CUPTI overhead", 950, 960, 100, 0));
  const json ev = json::parse(to_chrome_json(t))["traceEvents"];
  auto find = [&](const char* name) {
    for (const auto& e : ev)
      if (e["name"] == name && e["ph"] != "M") return e;
    ADD_FAILURE() << "no event " << name;
    return json();
  };
  const json graph = find("graph 7");
  EXPECT_EQ(graph["args"]["graph id"], 7);
  EXPECT_EQ(graph["args"]["kernels"], 16);
  EXPECT_FALSE(graph["args"].contains("graph node id"));
  EXPECT_FALSE(graph["args"].contains("grid"));
  EXPECT_FALSE(graph["args"].contains("stage"));  // none known: no arg, never an empty one
  const json node = find("node");
  EXPECT_EQ(node["args"]["graph node id"], 3);
  EXPECT_EQ(node["args"]["stage"], "physics/integrate");
  EXPECT_EQ(node["args"]["grid"], (json::array({2, 1, 1})));
  const json copy = find("Memcpy DtoH");
  EXPECT_EQ(copy["cat"], "gpu_memcpy");
  EXPECT_EQ(copy["args"]["bytes"], 4096);
  EXPECT_EQ(copy["pid"], 1);
  EXPECT_EQ(copy["tid"], 5);
  EXPECT_EQ(copy["args"]["device"], 1);  // HTA counts a copy without these as CPU work
  EXPECT_EQ(copy["args"]["stream"], 5);
  EXPECT_EQ(copy["args"]["correlation"], 11);
  EXPECT_DOUBLE_EQ(copy["args"]["memory bandwidth (GB/s)"].get<double>(), 40.96);
  const json memset = find("Memset");
  EXPECT_EQ(memset["cat"], "gpu_memset");
  EXPECT_EQ(memset["args"]["bytes"], 64);
  EXPECT_EQ(memset["args"]["stream"], 5);
  EXPECT_EQ(memset["args"]["correlation"], 12);
  const json launch = find("cudaGraphLaunch");
  EXPECT_EQ(launch["cat"], "cuda_runtime");
  EXPECT_EQ(launch["args"]["correlation"], 9);
  EXPECT_EQ(launch["args"]["cbid"], 311);
  EXPECT_EQ(launch["pid"], 100);
  EXPECT_EQ(launch["tid"], 101);
  EXPECT_FALSE(launch["args"].contains("stream"));
  EXPECT_EQ(find("cuLaunchKernelEx")["cat"], "cuda_driver");
  const json sync = find("Stream Synchronize");  // Kineto's shape: on the device's stream
  EXPECT_EQ(sync["cat"], "cuda_sync");
  EXPECT_EQ(sync["args"]["cuda_sync_kind"], "Stream Synchronize");
  EXPECT_EQ(sync["pid"], 1);
  EXPECT_EQ(sync["tid"], 5);
  EXPECT_EQ(sync["args"]["correlation"], 13);
  EXPECT_EQ(find("CUPTI overhead")["cat"], "overhead");
}

// A program's own ranges need not nest (NVTX start/end ranges, another domain's pushes); a thread's
// events on one track must (Perfetto and HTA read them as one call stack). A range that would cross
// goes to an overflow track of its thread; what nests stays.
TEST(ChromeTrace, RangesThatWouldCrossGoToTheirThreadsOverflowTracks) {
  Trace t;
  t.spans.push_back(Span::cpu_stage("ProfilerStep#0", kStepStage, 0, 0, 100, 1, 7));
  t.spans.push_back(Span::cpu_stage("physics", 2, 0, 10, 50, 1, 7));
  t.spans.push_back(Span::range("around", 5, 60, 1, 7));   // around physics: nests
  t.spans.push_back(Span::range("early", 5, 30, 1, 7));    // physics begins inside, ends after
  t.spans.push_back(Span::range("late", 40, 120, 1, 7));   // outlasts the step
  t.spans.push_back(Span::range("later", 45, 130, 1, 7));  // overlaps "late" too
  t.spans.push_back(Span::range("between", 150, 160, 1, 7));
  t.spans.push_back(Span::range("loader", 0, 10, 1, 8));
  const json ev = json::parse(to_chrome_json(t))["traceEvents"];
  std::map<std::string, std::int64_t> tid;
  std::map<std::int64_t, std::string> track;
  for (const auto& e : ev) {
    if (e["name"] == "thread_name") track[e["tid"].get<std::int64_t>()] = e["args"]["name"];
    if (e["ph"] != "X") continue;
    tid[e["name"].get<std::string>()] = e["tid"].get<std::int64_t>();
    if (e["name"] == "loader") {
      EXPECT_EQ(e["cat"], "user_annotation");
    }
  }
  constexpr std::int64_t kLane = std::int64_t{1} << 22;  // tids stay below 2^32 (Perfetto's)
  EXPECT_EQ(tid["around"], 7);
  EXPECT_EQ(tid["between"], 7);
  EXPECT_EQ(tid["physics"], 7);  // simprof's own spans never move
  EXPECT_EQ(tid["early"], 7 + kLane);
  EXPECT_EQ(tid["late"], 7 + kLane);  // after "early" on the same overflow track
  EXPECT_EQ(tid["later"], 7 + 2 * kLane);
  EXPECT_EQ(tid["loader"], 8);
  EXPECT_EQ(track[7], "step loop (thread 7)");
  EXPECT_EQ(track[7 + kLane], "thread 7 (ranges that cross, 1)");
  EXPECT_EQ(track[7 + 2 * kLane], "thread 7 (ranges that cross, 2)");
  EXPECT_EQ(track[8], "thread 8");
  // Each track now nests, as the Kineto contract's rule reads it.
  const std::vector<std::string> crossed =
      simprof::testing::host_nesting_violations(json::parse(to_chrome_json(t)));
  EXPECT_TRUE(crossed.empty()) << crossed.front();
}

TEST(ChromeTrace, AtomicWrite) {
  Trace t;
  t.spans.push_back(Span::cpu_stage("x", 2, 0, 0, 1, 1, 1));
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
Trace synthetic(std::int64_t gap_ns, int n_kernels) {
  Trace t;
  t.spans.push_back(Span::cpu_stage("ProfilerStep#5", kStepStage, 5, 0, 1'000'000, 1, 1));
  std::int64_t ts = 20'000;
  for (int i = 0; i < n_kernels; ++i) {
    const auto corr = static_cast<std::uint64_t>(i + 1);
    const std::int64_t at = 1000 + i * 4000;
    t.spans.push_back(Span::launch("cudaLaunchKernel", at, at + 3000, 1, 1, corr));
    t.spans.push_back(Span::kernel(i % 2 ? "contacts" : "forces", ts, ts + 1000, 0, 7, corr));
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
  // Each kernel starts 19 us after its launch call began (kernel 20 + 4i us, launch 1 + 4i us).
  EXPECT_NEAR(s.launch_latency_p50_us, 19.0, 1e-9);
  EXPECT_NEAR(s.launch_latency_p99_us, 19.0, 1e-9);
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
  // Latencies 19.0 - 2.9i us (kernel 20 + 1.1i, launch 1 + 4i): 4.5 ... 19.0, interpolated.
  ASSERT_EQ(a.steps.size(), 1u);
  EXPECT_NEAR(a.steps[0].launch_latency_p50_us, (10.3 + 13.2) / 2, 1e-9);
  EXPECT_NEAR(a.steps[0].launch_latency_p99_us, 16.1 + 2.9 * 0.95, 1e-9);
  const Trace empty;
  EXPECT_EQ(analyze(empty).verdict.rfind("no kernels", 0), 0u);
}

// A replayed graph's kernels all carry the graph launch's correlation: the stage their node was
// captured in is what places them, and the analysis groups them by it.
TEST(TraceAnalysis, GraphKernelsAreGroupedByTheStageTheyWereCapturedIn) {
  Trace t = synthetic(/*gap_ns=*/100, 6);  // kernels of 1 us: forces, contacts, forces, ...
  int i = 0;
  for (Span& s : t.spans)
    if (s.kind == SpanKind::kKernel) {
      KernelPayload& k = s.get<KernelPayload>();
      k.graph_id = 4;
      k.graph_node_id = static_cast<std::uint64_t>(++i);
      if (i <= 3)
        k.stage = "physics/forces";
      else if (i <= 5)
        k.stage = "physics/contacts";  // the 6th: captured outside a stage
    }
  const auto a = analyze(t);
  ASSERT_EQ(a.stages.size(), 3u);
  EXPECT_EQ(a.stages[0].name, "physics/forces");
  EXPECT_EQ(a.stages[0].calls, 3u);
  EXPECT_NEAR(a.stages[0].total_us, 3.0, 1e-9);
  EXPECT_NEAR(a.stages[0].share, 0.5, 1e-12);
  EXPECT_EQ(a.stages[1].name, "physics/contacts");
  EXPECT_EQ(a.stages[1].calls, 2u);
  EXPECT_EQ(a.stages[2].name, "(no stage)");
  EXPECT_EQ(a.stages[2].calls, 1u);
  const std::string r = a.report();
  EXPECT_NE(r.find("stage (graph kernels by capture)"), std::string::npos) << r;
  EXPECT_NE(r.find("physics/contacts"), std::string::npos) << r;
  // Without stages on any kernel there is no stage table.
  EXPECT_TRUE(analyze(synthetic(100, 6)).stages.empty());
  EXPECT_EQ(analyze(synthetic(100, 6)).report().find("graph kernels by capture"),
            std::string::npos);
}

TEST(TimeBase, ConvertsTicksOfItsClockToNanoseconds) {
  ManualClock mc;
  const TimeBase ns_base(mc.clock());  // 1e9 ticks per second
  mc.set_ns(1'234'567);
  EXPECT_EQ(ns_base.now_ns(), 1'234'567);
  static std::int64_t ticks = 0;
  const Clock two_ghz = Clock::custom([](const void*) noexcept { return ticks; }, nullptr, 2e9);
  const TimeBase tb(two_ghz);
  ticks = 3'000'001;  // 1'500'000.5 ns: rounds to nearest
  EXPECT_EQ(tb.now_ns(), 1'500'001);
  EXPECT_EQ(tb.to_ns(-4), -2);
  EXPECT_EQ(tb.clock().ticks_per_second(), 2e9);
}

TEST(TraceAnalysis, CommunicationTimeAndItsOverlapWithComputation) {
  Trace t;
  t.spans.push_back(Span::cpu_stage("ProfilerStep#1", kStepStage, 1, 0, 100'000, 1, 1));
  t.spans.push_back(Span::launch("cudaLaunchKernel", 1000, 2000, 1, 1, 1));
  t.spans.push_back(Span::kernel("integrate", 10'000, 20'000, 0, 7, 1));
  t.spans.push_back(
      Span::launch("cuLaunchKernelEx", 3000, 4000, 1, 1, 2, CallPayload{0, LaunchApi::kDriver}));
  t.spans.push_back(Span::kernel("ncclDevKernel_AllReduce_Sum_f32", 15'000, 30'000, 0, 9, 2));
  const auto a = analyze(t);
  ASSERT_EQ(a.steps.size(), 1u);
  EXPECT_EQ(a.steps[0].kernels, 2u);
  EXPECT_NEAR(a.steps[0].comm_us, 15.0, 1e-9);
  EXPECT_NEAR(a.steps[0].comm_overlap, 5.0 / 15.0, 1e-12);  // 15-20 us overlapped integrate
  EXPECT_NE(a.report().find("33%"), std::string::npos) << a.report();
  EXPECT_TRUE(std::isnan(analyze(synthetic(100, 2)).steps[0].comm_overlap));  // no comm: NaN
}
