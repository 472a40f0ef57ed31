// SPDX-License-Identifier: MIT
// check_causality(): each rule catches its violation (and only it), the kernels of one graph launch
// may run side by side, torch.profiler's own traces pass, and a session says the result in every
// window it writes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "simprof/base/manual_clock.hpp"
#include "simprof/trace/causality.hpp"
#include "simprof/trace/session.hpp"
#include "test_util.hpp"

using namespace simprof;
using simprof::testing::quiet;
using simprof::testing::slurp;

namespace {

std::size_t count_rule(const CausalityReport& r, const std::string& rule) {
  std::size_t n = 0;
  for (const auto& v : r.violations) n += v.rfind(rule + ":", 0) == 0;
  return n;
}

// Two kernels back to back on stream 7, each launched 3 us before it runs, then a stream sync.
Trace two_kernels() {
  Trace t;
  t.spans.push_back(Span::launch("cudaLaunchKernel", 0, 2'000, 1, 1, 11));
  t.spans.push_back(Span::kernel("a", 3'000, 13'000, 0, 7, 11));
  t.spans.push_back(Span::launch("cudaLaunchKernel", 2'500, 4'000, 1, 1, 12));
  t.spans.push_back(Span::kernel("b", 13'000, 20'000, 0, 7, 12));
  t.spans.push_back(Span::synchronization(SyncKind::kStream, 4'500, 21'000, 0, 7, 13));
  t.spans.push_back(Span::launch("cudaStreamSynchronize", 4'400, 21'100, 1, 1, 13,
                                 CallPayload{131, LaunchApi::kRuntime, /*waits_for_device=*/true}));
  return t;
}

// A Kineto file names its host calls; a reader of one decides there which block the host until a
// stream or the device is done (cudaStreamSynchronize, cudaDeviceSynchronize, cuStreamSynchronize,
// cuCtxSynchronize; not an event's synchronisation).
bool blocks_for_device(const std::string& call) {
  for (const char* n : {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaThreadSynchronize",
                        "cuStreamSynchronize", "cuCtxSynchronize"})
    if (call == n || call == std::string(n) + "_ptsz") return true;
  return false;
}

// The chrome/Kineto JSON of a trace file as typed spans: device work, host calls and syncs.
Trace from_chrome_json(const std::string& raw) {
  const auto j = nlohmann::json::parse(raw);
  Trace t;
  auto ns = [](const nlohmann::json& v) {
    return static_cast<std::int64_t>(std::llround(v.get<double>() * 1000));
  };
  for (const auto& e : j["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", "");
    const auto args = e.value("args", nlohmann::json::object());
    const std::int64_t b = ns(e["ts"]), en = b + ns(e["dur"]);
    const std::uint64_t corr = args.value("correlation", std::uint64_t{0});
    if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
      Span s = Span::kernel(e.value("name", ""), b, en, args.value("device", 0),
                            args.value("stream", std::int64_t{0}), corr);
      s.get<KernelPayload>().graph_id = args.value("graph id", std::uint64_t{0});
      t.spans.push_back(std::move(s));
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      const std::string call = e.value("name", "");
      CallPayload p;
      p.waits_for_device = blocks_for_device(call);
      t.spans.push_back(Span::launch(call, b, en, 0, 0, corr, p));
    } else if (cat == "cuda_sync") {
      const std::string kind = args.value("cuda_sync_kind", "");
      const SyncKind k = kind == "stream_synchronize"    ? SyncKind::kStream
                         : kind == "context_synchronize" ? SyncKind::kContext
                                                         : SyncKind::kUnknown;
      t.spans.push_back(Span::synchronization(k, b, en, args.value("device", 0),
                                              args.value("stream", std::int64_t{-1}), corr));
    }
  }
  return t;
}

}  // namespace

TEST(TraceCausality, APossibleTracePassesWithItsTrackFigures) {
  const CausalityReport r = check_causality(two_kernels());
  EXPECT_TRUE(r.ok()) << r.summary();
  ASSERT_EQ(r.tracks.size(), 1u);
  EXPECT_EQ(r.tracks[0].spans, 2u);
  EXPECT_EQ(r.tracks[0].busy_ns, 17'000);
  EXPECT_EQ(r.tracks[0].extent_ns, 17'000);
  EXPECT_EQ(r.tracks[0].overlaps, 0u);
  EXPECT_EQ(r.summary(), "ok: 2 device spans on 1 track");
}

TEST(TraceCausality, OverlapOnOneStreamIsCaughtAndSumsPastTheExtent) {
  Trace t = two_kernels();
  t.spans[3].begin_ns = 12'000;  // b begins 1 us before a ends
  const CausalityReport r = check_causality(t);
  EXPECT_EQ(r.violation_count, 2u) << r.summary();
  EXPECT_EQ(count_rule(r, "overlap"), 1u);
  EXPECT_EQ(count_rule(r, "busy"), 1u);  // 18 us of work in 17 us
  EXPECT_EQ(r.tracks[0].overlaps, 1u);
  EXPECT_NE(r.violations[0].find("'b' (correlation 12)"), std::string::npos) << r.violations[0];
  EXPECT_NE(r.violations[0].find("1000 ns"), std::string::npos) << r.violations[0];
}

TEST(TraceCausality, TwoStreamsMayOverlap) {
  Trace t = two_kernels();
  t.spans[3].begin_ns = 12'000;
  t.spans[3].stream = 9;
  const CausalityReport r = check_causality(t);
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.tracks.size(), 2u);
}

// The bug this rule exists for: the kernels of a window's last graph launch written hundreds of
// microseconds long each, one after another on one stream.
TEST(TraceCausality, GraphKernelsOfOneLaunchMayRunSideBySideButNotAcrossLaunches) {
  Trace t;
  t.spans.push_back(Span::launch("cudaGraphLaunch", 0, 5'000, 1, 1, 21));
  for (int i = 0; i < 2; ++i) {  // two branches of one graph, concurrently
    Span k = Span::kernel("branch", 6'000, 9'000, 0, 7, 21);
    k.get<KernelPayload>().graph_id = 3;
    k.get<KernelPayload>().graph_node_id = static_cast<std::uint64_t>(i);
    t.spans.push_back(k);
  }
  CausalityReport r = check_causality(t);
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.tracks[0].busy_ns, 3'000) << "a launch's kernels count as their union";
  // A memset node of the same launch (CUPTI's memset records carry the launch's correlation, no
  // graph id) runs beside the kernels of another branch: one block with them, no overlap.
  t.spans.push_back(Span::memset(4096, 7'000, 8'000, 0, 7, 21));
  r = check_causality(t);
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.tracks[0].busy_ns, 3'000);
  t.spans.back().correlation = 23;  // the memset of no graph launch: alone, it overlaps
  EXPECT_EQ(count_rule(check_causality(t), "overlap"), 1u);
  t.spans.pop_back();
  t.spans[2].correlation = 22;  // the second now another launch: it cannot overlap the first
  t.spans.push_back(Span::launch("cudaGraphLaunch", 5'000, 5'500, 1, 1, 22));
  r = check_causality(t);
  EXPECT_EQ(count_rule(r, "overlap"), 1u) << r.summary();
}

TEST(TraceCausality, DeviceWorkBeforeItsLaunchIsCaughtBeyondTheCrossClockSlack) {
  Trace t = two_kernels();
  t.spans[1].begin_ns = -1'000;  // a begins 1 us before its launch: within the slack
  EXPECT_TRUE(check_causality(t).ok()) << check_causality(t).summary();
  t.spans[1].begin_ns = -1'001;
  const CausalityReport r = check_causality(t);
  EXPECT_EQ(r.violation_count, 1u) << r.summary();
  EXPECT_EQ(count_rule(r, "launch"), 1u);
  EXPECT_TRUE(check_causality(t, /*cross_clock_ns=*/1'001).ok());
}

TEST(TraceCausality, DeviceWorkEndingAfterASyncThatWaitedForItIsCaught) {
  Trace t = two_kernels();
  t.spans[3].end_ns = 22'001;  // b ends after the stream sync (ended 21,000) by more than 1 us
  CausalityReport r = check_causality(t);
  EXPECT_EQ(r.violation_count, 1u) << r.summary();
  EXPECT_EQ(count_rule(r, "sync"), 1u);
  t.spans[3].end_ns = 22'000;  // within the slack
  EXPECT_TRUE(check_causality(t).ok());

  t.spans[3].end_ns = 30'000;
  t.spans[4].stream = 9;  // a sync of another stream does not wait for it
  EXPECT_TRUE(check_causality(t).ok());
  t.spans[4].get<SyncPayload>().sync = SyncKind::kContext;  // a context sync waits for every stream
  t.spans[4].stream = -1;
  EXPECT_EQ(count_rule(check_causality(t), "sync"), 1u);
  t.spans[4].get<SyncPayload>().sync =
      SyncKind::kEvent;  // which event, the record does not say: not a rule
  EXPECT_TRUE(check_causality(t).ok());
  t.spans[4].get<SyncPayload>().sync = SyncKind::kStream;
  t.spans[4].stream = 7;
  EXPECT_EQ(count_rule(check_causality(t), "sync"), 1u);
  // Whether the call blocked is the call's own (CallPayload::waits_for_device, set by the source
  // from its identity), not its name: CUPTI records a cudaStreamQuery as a sync, and it waits for
  // nothing; an event's synchronisation waits for the event, not for this stream.
  CallPayload& call = t.spans[5].get<CallPayload>();
  call.waits_for_device = false;
  t.spans[5].name = "cudaStreamSynchronize";  // the name alone decides nothing
  EXPECT_TRUE(check_causality(t).ok()) << check_causality(t).summary();
  call.waits_for_device = true;
  EXPECT_EQ(count_rule(check_causality(t), "sync"), 1u);
  t.spans[4].get<SyncPayload>().sync = SyncKind::kStream;
  t.spans[4].stream = 7;
  t.spans[4].begin_ns = 3'000;  // began before b's launch returned (4,000): need not wait for it
  EXPECT_TRUE(check_causality(t).ok()) << check_causality(t).summary();
}

TEST(TraceCausality, NegativeDurationsAreCaught) {
  Trace t = two_kernels();
  t.spans[0].end_ns = -5;
  const CausalityReport r = check_causality(t);
  EXPECT_EQ(count_rule(r, "duration"), 1u) << r.summary();
}

TEST(TraceCausality, TorchProfilersOwnTracesPassIt) {
  for (int rank : {0, 1}) {
    const std::string raw = slurp(std::string(SIMPROF_TEST_DATA_DIR) + "/kineto-2gpu/rank" +
                                  std::to_string(rank) + ".json");
    ASSERT_FALSE(raw.empty());
    const Trace t = from_chrome_json(raw);
    const CausalityReport r = check_causality(t);
    EXPECT_TRUE(r.ok()) << "rank " << rank << ": " << r.summary();
    std::size_t spans = 0;
    for (const auto& track : r.tracks) spans += track.spans;
    EXPECT_GE(spans, 60u) << "the reference's kernels were read";
  }
}

// A source reporting what no stream can do: the session says so in the window it writes.
TEST(TraceCausality, TheSessionSaysTheResultInEveryWindow) {
  struct Source : TraceSource {
    bool overlap = false;
    void bind(const TimeBase&) override {}
    void start() override {}
    void discard() override {}
    std::uint64_t stop_and_collect(std::vector<Span>& out) override {
      out.push_back(Span::kernel("a", 0, 10, 0, 7, 1));
      out.push_back(Span::kernel("b", overlap ? 5 : 10, 20, 0, 7, 2));
      return 0;
    }
    void describe(Trace&) const override {}
  } source;
  ManualClock mc;
  StepProfiler prof(quiet(), 1, mc.clock());
  TraceOptions o;
  o.schedule = Schedule{0, 0, 1, 2, 0};
  TraceSession session(prof, o);
  auto joined = session.add_source(&source);
  std::vector<Trace> traces;
  session.on_trace_ready([&](const Trace& t, std::uint64_t) { traces.push_back(t); });
  const simprof::testing::SimprofLog log;
  for (int i = 0; i < 2; ++i) {
    source.overlap = i == 1;
    auto step = prof.step();
    mc.advance_ns(1000);
  }
  ASSERT_EQ(traces.size(), 2u);
  EXPECT_EQ(traces[0].metadata.at("causality"), "ok: 2 device spans on 1 track");
  EXPECT_EQ(traces[1].metadata.at("causality").rfind("2 violations: overlap:", 0), 0u)
      << traces[1].metadata.at("causality");
  EXPECT_NE(log.str().find("trace window 1 breaks the trace's causality"), std::string::npos)
      << log.str();
  EXPECT_EQ(log.str().find("trace window 0"), std::string::npos) << "window 0 is fine: not said";
}
