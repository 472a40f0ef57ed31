// SPDX-License-Identifier: MIT
// GraphKernelTimer: every node of a replayed graph timed from stamps in the chain of a sampled
// copy — kernels of known duration, their names and stages; the stamps' lateness and the readings
// against CUPTI's own kernel records; GraphCache with two measuring tools.
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

TEST_F(GpuTest, EveryNodeOfAReplayedGraphIsTimedNamedAndStaged) {
  Stream stream;
  StepProfiler prof(quiet(), 0);
  GraphKernelTimerOptions o;
  o.sample_every = 4;  // offset 0: steps 0, 4, 8, ...
  o.ring = 16;         // the host runs ahead of the GPU: room for every sample of the run
  GraphKernelTimer kernels(prof, stream, o);
  EXPECT_EQ(kernels.options().sample_offset, 0);
  EXPECT_GT(kernels.hop_ns(), 0.0);
  GraphCacheOptions go;
  go.warmup = 1;  // step 0 eager (sampled, no copy yet), step 1 captured
  GraphCache cache(stream, go, kernels.instrumentation());
  Step step(prof);
  constexpr int kSteps = 41;
  for (int i = 0; i < kSteps; ++i) {
    auto s = prof.step();
    cache.run({1}, [&](cudaStream_t st) { step.run(st); });
  }
  kernels.synchronize();
  EXPECT_EQ(cache.counters().captures, 1u);
  // Sampled: 0 (eager, missed), 4, 8, ..., 40: ten stamped replays, no other launch of the copy.
  EXPECT_EQ(kernels.missed(), 1u);
  EXPECT_EQ(kernels.replays(), 10u);
  EXPECT_EQ(kernels.dropped(), 0u);
  EXPECT_EQ(kernels.unstamped(), 0u);
  EXPECT_EQ(cache.counters().instrumented_replays, 10u);

  const std::vector<KernelNodeTime> nodes = kernels.nodes();
  ASSERT_EQ(nodes.size(), 5u) << "four kernels and a memset";
  const KernelNodeTime* a = find(nodes, "collide_spin", 0);
  const KernelNodeTime* b = find(nodes, "collide_spin", 1);
  const KernelNodeTime* in = find(nodes, "integrate_spin");
  const KernelNodeTime* cam = find(nodes, "camera_spin");
  const KernelNodeTime* set = find(nodes, "memset");
  ASSERT_TRUE(a && b && in && cam && set);
  // Named by the node's function, demangled; placed in the stage open at its capture.
  EXPECT_NE(in->name.find("integrate_spin(unsigned long long)"), std::string::npos) << in->name;
  EXPECT_EQ(a->stage_name, "physics/collide");
  EXPECT_EQ(b->stage_name, "physics/collide");
  EXPECT_EQ(in->stage_name, "physics/integrate");
  EXPECT_EQ(cam->stage_name, "sensors/Cam");
  EXPECT_EQ(set->stage_name, "sensors/Cam");
  EXPECT_TRUE(a->kernel && in->kernel && cam->kernel);
  EXPECT_FALSE(set->kernel);
  for (const auto& n : nodes) EXPECT_EQ(n.count, 10u) << n.name;
  // Known durations: within 5 % or 1 us (the launch gap before each kernel is in its reading).
  auto near = [](const KernelNodeTime* k, double want_s) {
    SIMPROF_TIMING EXPECT_NEAR(k->mean_s, want_s, std::max(1e-6, 0.05 * want_s))
        << k->name << ": min " << k->min_s << " max " << k->max_s;
    SIMPROF_TIMING EXPECT_GE(k->min_s, want_s - 0.1e-6) << k->name;  // a spin never ends early
  };
  near(a, kCollideA * 1e-9);
  near(b, kCollideB * 1e-9);
  near(in, kIntegrate * 1e-9);
  near(cam, kCamera * 1e-9);
  SIMPROF_TIMING EXPECT_LT(set->mean_s, 5e-6) << "a 4 KiB memset";
  // The table groups them by stage, the most device time first.
  const std::string table = kernel_table(kernels);
  const auto at = [&](const char* what) { return table.find(what); };
  ASSERT_NE(at("sensors/Cam"), std::string::npos) << table;
  ASSERT_NE(at("physics/collide"), std::string::npos) << table;
  ASSERT_NE(at("physics/integrate"), std::string::npos) << table;
  SIMPROF_TIMING EXPECT_LT(at("sensors/Cam"), at("physics/collide")) << table;  // 30 us > 25 us
  SIMPROF_TIMING EXPECT_LT(at("physics/collide"), at("physics/integrate")) << table;
  EXPECT_EQ(table.find("memset"), std::string::npos) << "kernels only:\n" << table;
  std::printf("%s", table.c_str());
  // CUPTI's ids of the graph and its nodes: one graph, five distinct nodes. Last: while another
  // tool (compute-sanitizer) holds CUPTI, CUPTI gives no ids, and only this part is skipped.
  if (a->graph_id == 0 && gt::cupti_held_by_another_tool())
    GTEST_SKIP() << "CUPTI's graph and node ids not checked: another tool holds CUPTI (everything "
                    "else in this test was checked)";
  for (const auto& n : nodes) {
    EXPECT_EQ(n.graph_id, a->graph_id);
    EXPECT_NE(n.node_id, 0u) << n.name;
  }
  EXPECT_NE(a->graph_id, 0u);
  EXPECT_NE(a->node_id, b->node_id);
}

// The stamps run right after their kernels even with a GPU-filling branch beside the chain (CUPTI's
// records of the stamped replays), and the readings, taken with CUPTI off, agree with CUPTI's
// kernel durations in a separate pass.
TEST_F(GpuTest, NodeTimesAgreeWithCuptiAndStampsAreNeverLate) {
  Stream stream;
  StepProfiler prof(quiet(), 0);
  // Step 0 captures; steps 1-8 read with CUPTI off; steps 9-16 traced (all stamped).
  gt::KernelTraceSession kt(prof, Schedule{0, 0, 8, 1, 9});
  SIMPROF_REQUIRE_CUPTI(kt.tracer);
  GraphKernelTimerOptions o;
  o.sample_every = 1;
  o.ring = 16;
  GraphKernelTimer kernels(prof, stream, o);
  std::map<std::string, std::vector<double>> ours;  // kernel -> readings, steps 1-8 (no CUPTI)
  std::vector<std::string> node_names;  // the copy's nodes, in the order of a replay's readings
  kernels.set_on_replay([&](const KernelReplay& r) {
    if (r.step == 0 || r.step > 8) return;
    for (std::size_t i = 0; i < r.node_s.size(); ++i) ours[node_names.at(i)].push_back(r.node_s[i]);
  });
  GraphCacheOptions go;
  go.warmup = 0;
  GraphCache cache(stream, go, kernels.instrumentation());
  Step step(prof);
  step.crowd = true;
  for (int i = 0; i < 17; ++i) {
    if (i == 9) kernels.synchronize();  // every reading of the first pass in before CUPTI starts
    auto s = prof.step();
    cache.run({1}, [&](cudaStream_t st) { step.run(st); });
    if (i == 0) {
      stream.synchronize();
      for (const auto& k : kernels.nodes()) node_names.push_back(k.name);
    }
  }
  kernels.synchronize();
  stream.synchronize();
  ASSERT_EQ(kt.traces.size(), 1u);
  EXPECT_EQ(kernels.dropped(), 0u);
  EXPECT_EQ(kernels.replays(), 17u);
  // CUPTI's view: each of our kernels, then the stamp that follows it on its stream.
  std::vector<const Span*> spans = gt::of_kind(kt.traces[0], SpanKind::kKernel);
  std::sort(spans.begin(), spans.end(),
            [](const Span* x, const Span* y) { return x->begin_ns < y->begin_ns; });
  std::map<std::string, std::vector<double>> cupti;
  std::vector<const Span*> stamp_spans;
  for (const Span* k : spans)
    if (k->name.find("node_stamp_kernel") != std::string::npos) stamp_spans.push_back(k);
  // How late the stamp after each chain kernel ran: the first stamp to start after the kernel
  // ended (no other kernel of the step ends within microseconds of a chain kernel).
  std::vector<double> late_ns;
  for (const Span* k : spans) {
    if (k->name.find("node_stamp_kernel") != std::string::npos) continue;
    if (std::find(node_names.begin(), node_names.end(), k->name) == node_names.end()) continue;
    cupti[k->name].push_back(static_cast<double>(k->end_ns - k->begin_ns) * 1e-9);
    if (k->name.find("crowd_spin") != std::string::npos) continue;
    double first = 1e18;
    for (const Span* st : stamp_spans)
      if (st->begin_ns >= k->end_ns)
        first = std::min(first, static_cast<double>(st->begin_ns - k->end_ns));
    late_ns.push_back(first);
  }
  ASSERT_EQ(cupti.size(), 4u) << "collide, integrate, camera and crowd";
  ASSERT_GE(late_ns.size(), 8u * 4u);
  std::sort(late_ns.begin(), late_ns.end());
  const double p99 =
      late_ns[static_cast<std::size_t>(0.99 * static_cast<double>(late_ns.size() - 1))];
  std::printf("stamp after its kernel (CUPTI): median %.0f ns, p99 %.0f ns, max %.0f ns over %zu\n",
              late_ns[late_ns.size() / 2], p99, late_ns.back(), late_ns.size());
  SIMPROF_TIMING EXPECT_LE(p99, 1000.0) << "a stamp ran late after its kernel";
  for (const auto& [name, durations] : cupti) {
    ASSERT_TRUE(ours.count(name)) << name;
    double c = 0, m = 0;
    for (double d : durations) c += d;
    for (double d : ours[name]) m += d;
    c /= static_cast<double>(durations.size());
    m /= static_cast<double>(ours[name].size());
    std::printf("%-48s CUPTI %8.2f us, stamps %8.2f us\n", name.c_str(), c * 1e6, m * 1e6);
    if (name.find("collide_spin") != std::string::npos) {
      // Known limit (H200, 2026-12-02): beside the 60 us crowding branch one collide node read
      // ~60 us more than CUPTI's duration in the stamped copy: it waited behind that branch (the
      // driver maps a graph's branches onto a few hardware queues), and a reading counts the wait
      // after its predecessors' ends, where CUPTI's duration starts at the kernel's first block.
      // A reading is never shorter than the kernel's run.
      SIMPROF_TIMING EXPECT_GE(m, c - 1e-6) << name;
      continue;
    }
    SIMPROF_TIMING EXPECT_NEAR(m, c, std::max(1e-6, 0.05 * c)) << name;
  }
}

// Two measuring tools on one cache: each makes its own copy, and a step runs the copy of the
// first tool that samples it; detach(tool) leaves the other.
TEST_F(GpuTest, GraphCacheRunsTheCopyOfTheToolThatSamples) {
  Stream stream;
  StepProfiler prof(quiet(), 0);
  DeviceStageTimerOptions so;
  so.sample_every = 4;  // steps 0, 4, 8
  so.max_in_flight = 0;
  DeviceStageTimer stages(prof, stream, so);
  GraphKernelTimerOptions ko;
  ko.sample_every = 4;
  ko.sample_offset = 2;  // steps 2, 6, 10
  GraphKernelTimer kernels(prof, stream, ko);
  GraphCacheOptions go;
  go.warmup = 0;
  GraphCache cache(stream, go, stages.instrumentation());
  cache.attach(kernels.instrumentation());
  cache.attach(kernels.instrumentation());  // once is enough
  Step step(prof);
  for (int i = 0; i < 11; ++i) {
    auto s = prof.step();
    cache.run({1}, [&](cudaStream_t st) { step.run(st); });
  }
  stages.synchronize();
  kernels.synchronize();
  EXPECT_EQ(cache.counters().captures, 1u);
  EXPECT_EQ(cache.counters().instrumented_replays, 6u);  // 0, 4, 8 and 2, 6, 10
  EXPECT_EQ(kernels.replays(), 3u);
  EXPECT_EQ(stages.joined(), 3u);
  SIMPROF_TIMING EXPECT_GE(stages.mean("sensors/Cam"), kCamera * 1e-9);
  // detach(tool) drops that tool's copies only (the other's, moved in the cache's list, stays
  // its own), and needs no capture.
  cache.detach(stages.instrumentation());
  EXPECT_EQ(cache.instrumentation(), kernels.instrumentation());
  EXPECT_EQ(kernels.nodes().size(), 5u) << "the kernel timer's copy is still launched";
  for (int i = 0; i < 4; ++i) {  // steps 11-14: 12 is the stage timer's (no copy now), 14 ours
    auto s = prof.step();
    cache.run({1}, [&](cudaStream_t st) { step.run(st); });
  }
  stages.synchronize();
  kernels.synchronize();
  EXPECT_EQ(cache.counters().captures, 1u) << "detach(tool) needs no capture";
  EXPECT_EQ(cache.counters().instrumented_replays, 7u);  // and step 14
  EXPECT_EQ(kernels.replays(), 4u);
  cache.detach(kernels.instrumentation());
  EXPECT_EQ(cache.instrumentation(), nullptr);
  EXPECT_TRUE(kernels.nodes().empty()) << "its copy went with its executable, and it was told";
}

// A recapture retires the key's old copy: it leaves nodes() and its stamps' slots go to the new one
// (max_stamps holds exactly one copy here: without the reuse the new graph would go unstamped).
TEST_F(GpuTest, ARecaptureRetiresTheOldCopyAndReusesItsStamps) {
  Stream stream;
  StepProfiler prof(quiet(), 0);
  GraphKernelTimerOptions o;
  o.sample_every = 1;
  o.ring = 16;
  o.max_stamps = 7;  // a begin and a hop stamp, and one for each of the step's 5 nodes
  GraphKernelTimer kernels(prof, stream, o);
  GraphCacheOptions go;
  go.warmup = 0;
  GraphCache cache(stream, go, kernels.instrumentation());
  Step step(prof);
  const auto body = [&](cudaStream_t st) { step.run(st); };
  for (int i = 0; i < 6; ++i) {  // steps 0-2 the first copy, 3 recaptured, 3-5 the second copy
    auto s = prof.step();
    if (i == 3)
      cache.recapture({1}, body);
    else
      cache.run({1}, body);
  }
  kernels.synchronize();
  EXPECT_EQ(cache.counters().captures, 2u);
  EXPECT_EQ(kernels.unstamped(), 0u);
  EXPECT_EQ(kernels.replays(), 6u);
  const auto nodes = kernels.nodes();
  ASSERT_EQ(nodes.size(), 5u) << "the retired copy's nodes are gone";
  for (const auto& n : nodes) {
    EXPECT_EQ(n.copy, 1u) << n.name;
    EXPECT_EQ(n.count, 3u) << n.name << ": steps 3, 4 and 5";
  }
}

TEST_F(GpuTest, KernelTimerRefusesBadOptions) {
  Stream stream;
  StepProfiler prof(quiet(), 0);
  GraphKernelTimerOptions o;
  o.sample_every = 0;
  EXPECT_THROW({ GraphKernelTimer t(prof, stream, o); }, std::invalid_argument);
  o.sample_every = 4;
  o.sample_offset = 4;
  EXPECT_THROW({ GraphKernelTimer t(prof, stream, o); }, std::invalid_argument);
  o.sample_offset = -1;
  o.ring = 0;
  EXPECT_THROW({ GraphKernelTimer t(prof, stream, o); }, std::invalid_argument);
  o.ring = 4;
  o.max_stamps = 6;  // a graph of 5 nodes needs 7 (a begin and a hop stamp too)
  GraphKernelTimer small(prof, stream, o);
  GraphCache cache(stream, {}, small.instrumentation());
  Step step(prof);
  for (int i = 0; i < 6; ++i) {
    auto s = prof.step();
    cache.run({1}, [&](cudaStream_t st) { step.run(st); });
  }
  small.synchronize();
  EXPECT_EQ(small.unstamped(), 1u) << "the graph replays unstamped, counted";
  EXPECT_EQ(small.replays(), 0u);
  EXPECT_TRUE(small.nodes().empty());
}

// A host a whole ring of samples ahead of the GPU: the sample that finds every row still on its
// way is not stamped (counted in dropped()), never waited for; the others are read in order.
TEST_F(GpuTest, KernelTimerDropsASampleWhenTheRingIsFullAndSaysSo) {
  SIMPROF_SKIP_GATED_UNDER_SANITIZER();
  Stream stream;
  simprof::testing::SimprofLog log;
  StepProfiler prof(quiet(), 0);
  GraphKernelTimerOptions o;
  o.sample_every = 1;
  o.ring = 2;
  GraphKernelTimer kernels(prof, stream, o);
  GraphCacheOptions go;
  go.warmup = 0;
  GraphCache cache(stream, go, kernels.instrumentation());
  Step step(prof);
  {
    auto s = prof.step();  // step 0: captured, and stamped
    cache.run({1}, [&](cudaStream_t st) { step.run(st); });
  }
  kernels.synchronize();
  ASSERT_EQ(kernels.replays(), 1u);
  gt::Gate gate;
  gate.hold(stream);             // nothing on the stream runs until open()
  for (int i = 0; i < 3; ++i) {  // steps 1, 2: stamped, their rows in flight; step 3: dropped
    auto s = prof.step();
    cache.run({1}, [&](cudaStream_t st) { step.run(st); });
  }
  EXPECT_EQ(kernels.dropped(), 1u);
  // Said once, with the fix (issue 41, case 3: an unpaced loop lost most samples in silence).
  EXPECT_EQ(log.count("sampled replays ahead of the GPU"), 1) << log.str();
  EXPECT_NE(log.str().find("pace the loop"), std::string::npos) << log.str();
  EXPECT_EQ(cache.counters().instrumented_replays, 3u) << "step 3 replayed the plain graph";
  gate.open();
  kernels.synchronize();
  EXPECT_EQ(kernels.replays(), 3u);
  EXPECT_EQ(kernels.missed(), 0u);
  for (const auto& n : kernels.nodes()) EXPECT_EQ(n.count, 3u) << n.name;
}

// A node's start through an empty node (a join): its nearest stamped predecessors' stamps. A graph
// built by hand, K1 (10 us) -> empty -> K2 (5 us), copied through an InstrumentedGraph: K2 reads
// 5 us, not 15; the empty node gets no stamp and no row.
TEST_F(GpuTest, ANodesStartGoesThroughEmptyNodesToTheStampsBefore) {
  Stream stream;
  StepProfiler prof(quiet(), 0);
  GraphKernelTimerOptions o;
  o.sample_every = 1;
  o.ring = 16;
  GraphKernelTimer kernels(prof, stream, o);
  GraphHandle g;
  SIMPROF_CUDA_CHECK(cudaGraphCreate(g.out(), 0));
  cudaKernelNodeParams p{};
  p.gridDim = dim3(1);
  p.blockDim = dim3(1);
  unsigned long long ns1 = 10'000, ns2 = 5'000;
  void* a1[] = {&ns1};
  void* a2[] = {&ns2};
  cudaGraphNode_t k1 = nullptr, empty = nullptr, k2 = nullptr;
  p.func = reinterpret_cast<void*>(&collide_spin);
  p.kernelParams = a1;
  SIMPROF_CUDA_CHECK(cudaGraphAddKernelNode(&k1, g.get(), nullptr, 0, &p));
  SIMPROF_CUDA_CHECK(cudaGraphAddEmptyNode(&empty, g.get(), &k1, 1));
  p.func = reinterpret_cast<void*>(&integrate_spin);
  p.kernelParams = a2;
  SIMPROF_CUDA_CHECK(cudaGraphAddKernelNode(&k2, g.get(), &empty, 1, &p));
  InstrumentedGraph stamped(kernels.instrumentation(), g.get());
  ASSERT_TRUE(stamped.instrumented());
  for (int i = 0; i < 4; ++i) {
    auto s = prof.step();
    EXPECT_TRUE(stamped.launch(stream));
  }
  kernels.synchronize();
  EXPECT_EQ(kernels.replays(), 4u);
  const auto nodes = kernels.nodes();
  ASSERT_EQ(nodes.size(), 2u) << "the empty node has no row";
  EXPECT_NE(nodes[1].name.find("integrate_spin"), std::string::npos) << nodes[1].name;
  EXPECT_EQ(nodes[1].index, 2u) << "its place in the graph's node list, the empty node counted";
  EXPECT_EQ(nodes[1].stage, kNoStage) << "a graph built by hand was captured in no stage";
  SIMPROF_TIMING EXPECT_NEAR(nodes[0].mean_s, 10e-6, 1e-6);
  SIMPROF_TIMING EXPECT_NEAR(nodes[1].mean_s, 5e-6, 1e-6) << "its start is K1's stamp";
}
