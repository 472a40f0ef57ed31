// SPDX-License-Identifier: MIT
// The kernel timer as a trace source: windows of stamped steps as device spans, checked like
// every trace, and left to CUPTI under a kernel tracer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu_test.hpp"
#include "kernel_timer_test.hpp"
#include "kernel_tracer_test.hpp"
#include "simprof/cuda/graphs/foreign_graph.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/timing/kernel_timer.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/trace/causality.hpp"
#include "simprof/trace/chrome_json.hpp"
#include "simprof/trace/session.hpp"
#include "test_util.hpp"
#include "trace_test.hpp"

using namespace simprof;
using namespace simprof::cuda;
namespace gt = simprof::cuda::gputest;
using gt::GpuTest;
using simprof::testing::quiet;

using gt::camera_spin;
using gt::collide_spin;
using gt::crowd_spin;
using gt::find;
using gt::integrate_spin;
using gt::kCamera;
using gt::kCollideA;
using gt::kCollideB;
using gt::kIntegrate;
using gt::Step;

namespace {

// A trace session whose source is the kernel timer (and, with `tracer`, a KernelTracer too), the
// loop's host times around each step: its launch, and when the test saw its work done.
struct TracedRun {
  std::vector<Trace> traces;
  std::vector<std::int64_t> launched, done;  // by step, timebase nanoseconds
};

struct RunOptions {
  bool background = false;
  bool with_tracer = false;
  bool session_first = false;  // the session's listener before the timer's
  bool wait_each_step = true;  // the host waits for each step (its interval holds the step)
  int active = 3;              // steps 5 .. 4 + active
};

TracedRun run_traced(const RunOptions& ro) {
  TracedRun out;
  Stream stream;
  StepProfiler prof(quiet(), 0);
  const TimeBase tb(prof.clock());
  TraceOptions topt;
  topt.schedule = {/*wait=*/4, /*warmup=*/1, /*active=*/ro.active, /*repeat=*/1};
  topt.background = ro.background;
  // Listeners run in the order they were added: the session's first, or the timer's.
  std::optional<TraceSession> trace;
  if (ro.session_first) trace.emplace(prof, topt);
  GraphKernelTimer kernels(prof, stream);  // default sampling: 1 step in 128, none in this run
  if (!ro.session_first) trace.emplace(prof, topt);
  trace->on_trace_ready([&](const Trace& t, std::uint64_t) { out.traces.push_back(t); });
  std::unique_ptr<KernelTracer> tracer;
  SourceRegistration joined_tracer;
  if (ro.with_tracer) {
    tracer = std::make_unique<KernelTracer>(prof);
    joined_tracer = trace->add_source(tracer.get());
  }
  auto joined = trace->add_source(&kernels);
  GraphCacheOptions go;
  go.warmup = 1;  // step 0 eager, step 1 captured, then replays
  GraphCache cache(stream, go, kernels.instrumentation());
  Step step(prof);
  for (int i = 0; i < 7 + ro.active; ++i) {
    auto s = prof.step();
    out.launched.push_back(tb.now_ns());
    cache.run({1}, [&](cudaStream_t st) { step.run(st); });
    if (ro.wait_each_step) stream.synchronize();
    out.done.push_back(tb.now_ns());
  }
  trace->wait();
  std::printf("clock alignment: within %.0f ns (half the ping-pong's shortest round trip)\n",
              kernels.clock_error_ns());
  EXPECT_EQ(kernels.trace_dropped(), 0u);
  EXPECT_GT(kernels.clock_error_ns(), 0.0);
  // Half a PCIe round trip: the H200 measured 0.9-1.4 us.
  EXPECT_LT(kernels.clock_error_ns(), 5'000.0) << "the clock alignment's round trip";
  return out;
}

}  // namespace

// The kernel timer as a trace source: every step of a window stamped (the default samples none of
// these), each node a device span on the stream's track with Kineto's fields, each replay's spans
// in the step that launched it, in the chain's order, of the spins' lengths; the trace physical.
TEST_F(GpuTest, AWindowsReplaysAreDeviceSpansWithKinetosFields) {
  for (const bool background : {false, true}) {
    for (const bool session_first : {false, true}) {
      SCOPED_TRACE(background ? "background session" : "session on the loop's thread");
      SCOPED_TRACE(session_first ? "the session's listener first" : "the timer's listener first");
      RunOptions ro;
      ro.background = background;
      ro.session_first = session_first;
      const TracedRun run = run_traced(ro);
      ASSERT_EQ(run.traces.size(), 1u);
      const Trace& t = run.traces[0];
      const CausalityReport physics = check_causality(t);
      EXPECT_TRUE(physics.ok()) << physics.summary();
      ASSERT_TRUE(t.metadata.count("graph_kernel_timer"));
      EXPECT_NE(t.metadata.at("graph_kernel_timer").find("3 stamped replays"), std::string::npos)
          << t.metadata.at("graph_kernel_timer");
      ASSERT_FALSE(t.devices.empty()) << "deviceProperties";
      // Steps 5, 6, 7 active: three replays of four kernels and a memset.
      std::map<std::uint64_t, std::vector<const Span*>> by_replay;
      for (const Span& s : t.spans)
        if (s.device >= 0) by_replay[s.correlation].push_back(&s);
      ASSERT_EQ(by_replay.size(), 3u);
      std::map<std::uint64_t, std::uint64_t>
          step_of;  // replay -> the step whose host span holds it
      for (auto& [corr, spans] : by_replay) {
        EXPECT_GE(corr, std::uint64_t{1} << 32) << "no launch record: ids of their own";
        ASSERT_EQ(spans.size(), 5u);
        std::sort(spans.begin(), spans.end(),
                  [](const Span* a, const Span* b) { return a->begin_ns < b->begin_ns; });
        // In the chain's order: collide A, collide B, integrate, memset, camera; none overlaps.
        const char* order[] = {"collide_spin", "collide_spin", "integrate_spin", "Memset",
                               "camera_spin"};
        const unsigned long long spin[] = {kCollideA, kCollideB, kIntegrate, 0, kCamera};
        const char* stage[] = {"physics/collide", "physics/collide", "physics/integrate", "",
                               "sensors/Cam"};
        for (std::size_t i = 0; i < 5; ++i) {
          const Span& s = *spans[i];
          EXPECT_NE(s.name.find(order[i]), std::string::npos) << i << ": " << s.name;
          EXPECT_EQ(s.device, 0);
          EXPECT_GE(s.stream, 0);
          EXPECT_EQ(s.stream, spans[0]->stream) << "one stream's track";
          if (i > 0) EXPECT_GE(s.begin_ns, spans[i - 1]->end_ns) << s.name;
          if (spin[i] == 0) {
            EXPECT_EQ(s.kind, SpanKind::kMemset);
            EXPECT_EQ(s.or_empty<TransferPayload>().bytes, 4096u);
            continue;
          }
          ASSERT_EQ(s.kind, SpanKind::kKernel);
          const KernelPayload& k = s.get<KernelPayload>();
          EXPECT_EQ(k.stage, stage[i]);
          if (k.graph_id == 0 && gt::cupti_held_by_another_tool()) {
            std::printf("CUPTI's graph and node ids not checked: another tool holds CUPTI\n");
          } else {
            EXPECT_NE(k.graph_id, 0u);
            EXPECT_NE(k.graph_node_id, 0u);
          }
          EXPECT_GT(k.block.x, 0);
          EXPECT_GT(k.registers, 0u);
          SIMPROF_TIMING EXPECT_GE(s.duration_ns(), static_cast<std::int64_t>(spin[i]) - 100)
              << s.name;
          SIMPROF_TIMING EXPECT_LE(s.duration_ns(), static_cast<std::int64_t>(spin[i]) + 1'500)
              << s.name;
        }
        EXPECT_EQ(spans[2]->get<KernelPayload>().grid.x, 8);
        EXPECT_EQ(spans[2]->get<KernelPayload>().block.x, 64);
        // Within the host's view of its step: after the launch, before the work was seen done
        // (give or take the clock alignment's half round trip, bounded above).
        const std::int64_t slack = 5'000;
        for (std::size_t i = 0; i < run.launched.size(); ++i)
          if (spans.front()->begin_ns >= run.launched[i] - slack &&
              spans.back()->end_ns <= run.done[i] + slack)
            step_of[corr] = i;
        EXPECT_TRUE(step_of.count(corr)) << "replay " << corr << " in no step's host interval";
      }
      std::vector<std::uint64_t> steps;
      for (const auto& [corr, st] : step_of) steps.push_back(st);
      std::sort(steps.begin(), steps.end());
      EXPECT_EQ(steps, (std::vector<std::uint64_t>{5, 6, 7}));
      // The JSON: Kineto's kernel event on pid = device, tid = stream, with its args.
      const nlohmann::json j = nlohmann::json::parse(to_chrome_json(t));
      bool seen = false;
      for (const auto& e : j["traceEvents"]) {
        if (e.value("cat", "") != "kernel" ||
            e["name"].get<std::string>().find("integrate_spin") == std::string::npos)
          continue;
        seen = true;
        EXPECT_EQ(e["ph"], "X");
        EXPECT_EQ(e["pid"], 0);
        EXPECT_EQ(e["tid"], by_replay.begin()->second[0]->stream);
        const auto& a = e["args"];
        for (const char* key : {"device", "stream", "correlation", "registers per thread",
                                "shared memory", "grid", "block"})
          EXPECT_TRUE(a.contains(key)) << key;
        // CUPTI's ids are written where CUPTI gave them: always, unless another tool holds it.
        if (a.contains("graph id") || !gt::cupti_held_by_another_tool())
          for (const char* key : {"graph id", "graph node id"}) EXPECT_TRUE(a.contains(key)) << key;
        EXPECT_EQ(a["stage"], "physics/integrate");
        EXPECT_EQ(a["grid"], nlohmann::json::array({8, 1, 1}));
      }
      EXPECT_TRUE(seen);
    }
  }
}

// A window longer than the ring (8 readings on their way) with the host running ahead: each
// window step waits for the oldest reading rather than leave itself out; every replay is traced.
TEST_F(GpuTest, ALongWindowWaitsForTheRingAndTracesEveryReplay) {
  RunOptions ro;
  ro.wait_each_step = false;
  ro.active = 20;
  const TracedRun run = run_traced(ro);
  ASSERT_EQ(run.traces.size(), 1u);
  std::set<std::uint64_t> replays;
  std::size_t kernels = 0;
  for (const Span& s : run.traces[0].spans)
    if (s.kind == SpanKind::kKernel) {
      replays.insert(s.correlation);
      ++kernels;
    }
  EXPECT_EQ(replays.size(), 20u);
  EXPECT_EQ(kernels, 20u * 4);
  const CausalityReport physics = check_causality(run.traces[0]);
  EXPECT_TRUE(physics.ok()) << physics.summary();
}

// With a KernelTracer in the same window, CUPTI's records are the spans: the timer neither stamps
// the window's steps nor adds spans (no kernel twice on a track), and says so in the header.
TEST_F(GpuTest, UnderAKernelTracerTheWindowsSpansAreCuptis) {
  {
    StepProfiler probe(quiet(), 0);
    KernelTracer t(probe);
    SIMPROF_REQUIRE_CUPTI(t);
  }
  RunOptions ro;
  ro.with_tracer = true;
  const TracedRun run = run_traced(ro);
  ASSERT_EQ(run.traces.size(), 1u);
  const Trace& t = run.traces[0];
  const CausalityReport physics = check_causality(t);
  EXPECT_TRUE(physics.ok()) << physics.summary();
  EXPECT_NE(t.metadata.at("graph_kernel_timer").find("CUPTI's records"), std::string::npos)
      << t.metadata.at("graph_kernel_timer");
  std::map<std::string, int> kernels;
  for (const Span& s : t.spans)
    if (s.kind == SpanKind::kKernel) {
      EXPECT_LT(s.correlation, std::uint64_t{1} << 32) << "CUPTI's, not the timer's: " << s.name;
      for (const char* k : {"collide_spin", "integrate_spin", "camera_spin", "node_stamp_kernel"})
        if (s.name.find(k) != std::string::npos) ++kernels[k];
    }
  EXPECT_EQ(kernels["collide_spin"], 6) << "3 replays x 2";
  EXPECT_EQ(kernels["integrate_spin"], 3);
  EXPECT_EQ(kernels["camera_spin"], 3);
  EXPECT_EQ(kernels["node_stamp_kernel"], 0) << "the window's steps are not stamped under CUPTI";
}
