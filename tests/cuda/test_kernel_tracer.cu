// SPDX-License-Identifier: MIT
// CUPTI kernel tracing on the GPU. Each test runs in its own process (ctest), so each gets CUPTI
// to itself. Windows that end while the loop or the device is still busy:
// test_kernel_tracer_windows.cu.
#include <gtest/gtest.h>

#include <cuda.h>
#include <cupti.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "cupti_records.hpp"
#include "gpu_test.hpp"
#include "kernel_tracer_test.hpp"
#include "kineto_contract.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"
#include "simprof/cuda/trace/kernel_tracer.hpp"
#include "simprof/profiler/collective.hpp"
#include "simprof/trace/analysis.hpp"
#include "simprof/trace/causality.hpp"
#include "simprof/trace/chrome_json.hpp"
#include "simprof/trace/session.hpp"
#include "trace_test.hpp"

using namespace simprof;
using namespace simprof::cuda;
namespace gt = simprof::cuda::gputest;
using gt::GpuTest;
using gt::of_kind;
using gt::quiet;

TEST_F(GpuTest, EveryKernelLaunchedIsTracedEagerAndReplayed) {
  Stream stream;
  DeviceBuffer<float> x(4096);
  StepProfiler prof(quiet(), 0);
  gt::KernelTraceSession kt(prof, Schedule{0, 0, 1, 2, 0});  // two windows of one step
  SIMPROF_REQUIRE_CUPTI(kt.tracer);
  const std::vector<Trace>& traces = kt.traces;
  GraphCacheOptions go;
  go.warmup = 0;
  GraphCache cache(stream, go);
  cache.run({1}, [&](cudaStream_t s) {
    for (int i = 0; i < 5; ++i) gt::axpb(x.data(), 4096, 1.0f, s);
  });  // captured before tracing
  {
    auto step = prof.step();
    auto st = prof.stage("physics");
    for (int i = 0; i < 7; ++i) gt::axpb(x.data(), 4096, 1.0f, stream);
  }
  {
    auto step = prof.step();
    auto st = prof.stage("physics");
    cache.run({1}, [&](cudaStream_t s) {
      for (int i = 0; i < 5; ++i) gt::axpb(x.data(), 4096, 1.0f, s);
    });
  }
  ASSERT_EQ(traces.size(), 2u);
  EXPECT_EQ(of_kind(traces[0], SpanKind::kKernel).size(), 7u);
  const auto replayed = of_kind(traces[1], SpanKind::kKernel);
  ASSERT_EQ(replayed.size(), 5u);
  std::set<std::int64_t> nodes;
  for (const auto* k : replayed) {
    EXPECT_GT(k->get<KernelPayload>().graph_id, 0u) << "a replayed kernel carries its graph id";
    nodes.insert(k->get<KernelPayload>().graph_node_id);
  }
  EXPECT_EQ(nodes.size(), 5u);
  EXPECT_EQ(traces[0].dropped + traces[1].dropped, 0u);
}

// A replayed graph's kernels all carry the graph launch's correlation; each also carries the stage
// its node was captured in: in the graph as captured, and in the stamped copy a DeviceStageTimer
// launches on its sampled steps (whose own stamp kernels carry none).
TEST_F(GpuTest, ReplayedGraphKernelsCarryTheStageTheyWereCapturedIn) {
  Stream stream;
  DeviceBuffer<float> x(4096);
  StepProfiler prof(quiet(), 0);
  // Step 0 captures (untraced); steps 1-4 replay, traced: two stamped, two plain.
  gt::KernelTraceSession kt(prof, Schedule{0, 0, 4, 1, 1});
  SIMPROF_REQUIRE_CUPTI(kt.tracer);
  DeviceStageTimerOptions dopt;
  dopt.sample_every = 2;
  dopt.max_in_flight = 0;
  DeviceStageTimer dev(prof, stream.get(), dopt);
  GraphCacheOptions go;
  go.warmup = 0;
  GraphCache cache(stream, go, dev.instrumentation());
  const StageId physics = prof.stage_id("physics");
  const StageId forces = prof.stage_id("physics/forces");
  const StageId contacts = prof.stage_id("physics/contacts");
  for (int i = 0; i < 5; ++i) {
    auto step = prof.step();
    auto st = prof.stage(physics);
    cache.run({1}, [&](cudaStream_t s) {
      {
        auto f = prof.stage(forces);
        for (int k = 0; k < 3; ++k) gt::axpb(x.data(), 4096, 1.0f, s);
      }
      {
        auto c = prof.stage(contacts);
        for (int k = 0; k < 2; ++k) gt::spin(5'000, s);
      }
    });
  }
  dev.synchronize();
  ASSERT_EQ(cache.counters().captures, 1u);
  ASSERT_EQ(kt.traces.size(), 1u);
  const auto kernels = of_kind(kt.traces[0], SpanKind::kKernel);
  std::map<std::string, int> staged;  // "kernel name -> stage": count
  std::set<std::uint64_t> graphs;
  for (const auto* k : kernels) {
    const KernelPayload& p = k->get<KernelPayload>();
    // The stage timer's own: a sampled step's eager stamps at the boundaries of `physics` (opened
    // outside the graph) and its publication on the timer's stream (a one-node graph of its own).
    if (k->name.find("publish_kernel") != std::string::npos) continue;
    if (p.graph_id == 0) {
      EXPECT_TRUE(k->name.find("stamp_kernel") != std::string::npos ||
                  k->name.find("begin_kernel") != std::string::npos)
          << k->name;
      continue;
    }
    graphs.insert(p.graph_id);
    const std::string what = k->name.find("axpb") != std::string::npos   ? "axpb"
                             : k->name.find("spin") != std::string::npos ? "spin"
                                                                         : "stamp";
    ++staged[what + " -> " + (p.stage.empty() ? "none" : p.stage)];
  }
  // 4 replays x (3 + 2) kernels, each in its stage; the two stamped replays' stamp kernels, none.
  EXPECT_EQ(staged["axpb -> physics/forces"], 12) << ::testing::PrintToString(staged);
  EXPECT_EQ(staged["spin -> physics/contacts"], 8) << ::testing::PrintToString(staged);
  EXPECT_GT(staged["stamp -> none"], 0) << ::testing::PrintToString(staged);
  EXPECT_EQ(staged.size(), 3u) << ::testing::PrintToString(staged);
  EXPECT_EQ(graphs.size(), 2u) << "the graph as captured and its stamped copy";
  // The analysis groups them by stage; the written trace names each kernel's stage.
  const TraceAnalysis a = analyze(kt.traces[0]);
  ASSERT_FALSE(a.stages.empty());
  EXPECT_EQ(a.stages[0].name, "physics/contacts");  // 2 x 5 us a replay: the most time
  const nlohmann::json j = nlohmann::json::parse(to_chrome_json(kt.traces[0]));
  int with_stage = 0;
  for (const auto& e : j["traceEvents"])
    if (e.value("cat", "") == "kernel" && e["args"].contains("stage")) {
      ++with_stage;
      EXPECT_TRUE(e["args"].contains("graph id") && e["args"].contains("graph node id")) << e;
    }
  EXPECT_EQ(with_stage, 20);
}

TEST_F(GpuTest, KernelDurationsAgreeWithEventsAndFlowsConnectLaunches) {
  Stream stream;
  StepProfiler prof(quiet(), 0);
  gt::KernelTraceSession kt(prof, Schedule{0, 1, 1, 1, 0});
  SIMPROF_REQUIRE_CUPTI(kt.tracer);
  Event e0, e1;
  for (int s = 0; s < 2; ++s) {
    gt::Gate gate;  // queue the events and the kernel together, so no launch gap falls between them
    gate.hold(stream);
    {
      auto step = prof.step();
      auto st = prof.stage("spin");
      e0.record(stream);
      gt::spin(200'000, stream);
      e1.record(stream);
      gate.open();
    }
  }
  const double events_us = e1.elapsed_ms_since(e0) * 1e3;
  const Trace trace = kt.last();
  std::vector<const Span*> kernels;  // the gate's wait kernel is traced too: keep the spin
  for (const auto* k : of_kind(trace, SpanKind::kKernel))
    if (k->name.find("spin_kernel") != std::string::npos) kernels.push_back(k);
  ASSERT_EQ(kernels.size(), 1u) << "the warm-up step's kernel was discarded";
  SIMPROF_TIMING EXPECT_NEAR(static_cast<double>(kernels[0]->duration_ns()) * 1e-3, events_us,
                             0.05 * events_us + 5.0);
  // The launch call, on the host, correlates with the kernel through a flow start and end.
  const auto corr = kernels[0]->correlation;
  const Span* launch = nullptr;
  for (const auto* a : of_kind(trace, SpanKind::kLaunch))
    if (a->correlation == corr) launch = a;
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->name, "cudaLaunchKernel");
  int flows = 0;
  for (const auto* f : of_kind(trace, SpanKind::kFlow))
    if (f->correlation == corr) {
      ++flows;
      EXPECT_EQ(f->begin_ns, launch->begin_ns);
      EXPECT_EQ(f->end_ns, kernels[0]->begin_ns);
      EXPECT_EQ(f->tid, launch->tid);
      EXPECT_EQ(f->device, kernels[0]->device);
      EXPECT_EQ(f->stream, kernels[0]->stream);
    }
  EXPECT_EQ(flows, 1);  // one arrow: the launch (start) to the kernel (end)
  // One clock: the kernel starts after its launch call began, and within the step's host span
  // plus the time the GPU takes (no synchronisation aligned them).
  EXPECT_GE(kernels[0]->begin_ns, launch->begin_ns);
  const Span* step = nullptr;
  for (const auto& s : trace.spans)
    if (s.is_step()) step = &s;
  ASSERT_NE(step, nullptr);
  EXPECT_GE(launch->begin_ns, step->begin_ns);
  EXPECT_LE(launch->begin_ns, step->end_ns);
  EXPECT_GE(kernels[0]->begin_ns, launch->begin_ns) << "a kernel runs after its launch began";
  SIMPROF_TIMING EXPECT_LT(kernels[0]->begin_ns - launch->begin_ns, 1'000'000)
      << "kernel more than 1 ms after its launch";
}

TEST_F(GpuTest, GraphLaunchModeWritesOneEventPerLaunch) {
  Stream stream;
  DeviceBuffer<float> x(1024);
  StepProfiler prof(quiet(), 0);
  KernelTracerOptions ko;
  ko.mode = TraceMode::kGraphLaunch;
  gt::KernelTraceSession kt(prof, Schedule{0, 0, 3, 1, 0}, ko);
  SIMPROF_REQUIRE_CUPTI(kt.tracer);
  GraphCacheOptions go;
  go.warmup = 0;
  GraphCache cache(stream, go);
  cache.run({1}, [&](cudaStream_t s) {
    for (int i = 0; i < 6; ++i) gt::axpb(x.data(), 1024, 1.0f, s);
  });
  for (int s = 0; s < 3; ++s) {
    auto step = prof.step();
    cache.run({1}, [&](cudaStream_t st) {
      for (int i = 0; i < 6; ++i) gt::axpb(x.data(), 1024, 1.0f, st);
    });
  }
  const Trace trace = kt.last();
  const auto graphs = of_kind(trace, SpanKind::kKernel);
  ASSERT_EQ(graphs.size(), 3u);
  for (const auto* g : graphs) {
    EXPECT_EQ(g->get<KernelPayload>().kernels, 6u);
    EXPECT_EQ(g->name.rfind("graph ", 0), 0u);
  }
  const auto a = analyze(trace);
  EXPECT_EQ(a.steps.size(), 3u);
  EXPECT_EQ(a.steps[0].kernels, 1u);  // one launch event per step in this mode
}

TEST_F(GpuTest, LaunchBoundVerdictForManySmallEagerKernels) {
  Stream stream;
  DeviceBuffer<float> x(1024);
  StepProfiler prof(quiet(), 1024);
  gt::KernelTraceSession kt(prof, Schedule{0, 1, 1, 1, 0});
  SIMPROF_REQUIRE_CUPTI(kt.tracer);
  for (int s = 0; s < 2; ++s) {
    auto step = prof.step();
    for (int i = 0; i < 100; ++i) gt::axpb(x.data(), 1024, 1.0f, stream);
    SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  const Trace trace = kt.last();
  const auto a = analyze(trace);
  ASSERT_EQ(a.steps.size(), 1u);
  EXPECT_EQ(a.steps[0].kernels, 100u);
  SIMPROF_TIMING EXPECT_TRUE(a.launch_bound) << a.report();
  SIMPROF_TIMING EXPECT_LT(a.steps[0].predicted_graph_us, a.steps[0].gpu_span_us);
  RecordProperty("verdict", a.verdict);
}

TEST_F(GpuTest, BusyCuptiDegradesGracefully) {
  CUpti_SubscriberHandle other = nullptr;  // "another profiler" holds CUPTI
  const CUptiResult held = cuptiSubscribe(
      &other, [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}, nullptr);
  if (held == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    GTEST_SKIP() << "CUPTI is already held by another tool (the case this test makes itself)";
  ASSERT_EQ(held, CUPTI_SUCCESS);
  Stream stream;
  DeviceBuffer<float> x(256);
  StepProfiler prof(quiet(), 0);
  gt::KernelTraceSession kt(prof, Schedule{0, 0, 1, 1, 0});
  EXPECT_FALSE(kt.tracer.enabled());
  EXPECT_NE(kt.tracer.disabled_reason().find("cuptiSubscribe"), std::string::npos)
      << kt.tracer.disabled_reason();
  {
    auto step = prof.step();
    auto st = prof.stage("physics");
    gt::axpb(x.data(), 256, 1.0f, stream);
  }
  stream.synchronize();
  const Trace trace = kt.last();
  EXPECT_EQ(of_kind(trace, SpanKind::kKernel).size(), 0u);
  std::size_t stages = 0;  // the CPU side is still traced
  for (const auto* c : of_kind(trace, SpanKind::kCpuStage)) stages += !c->is_step();
  EXPECT_EQ(stages, 1u);
  cuptiUnsubscribe(other);
}

// No GPU needed: the registration comes before CUPTI is asked for anything.
// Which host calls the physics checker counts as waits for the device: decided where the span is
// made, by CUPTI's callback id in its own API (the same number names another call in the other).
TEST(KernelTracerCalls, WaitsForTheDeviceByCallbackId) {
  using simprof::LaunchApi;
  using simprof::cuda::detail::waits_for_device;
  EXPECT_TRUE(
      waits_for_device(LaunchApi::kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020));
  EXPECT_TRUE(
      waits_for_device(LaunchApi::kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020));
  EXPECT_TRUE(waits_for_device(LaunchApi::kDriver, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize));
  EXPECT_TRUE(waits_for_device(LaunchApi::kDriver, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize));
  // CUPTI records a query as a synchronisation, and an event's waits for the event only.
  EXPECT_FALSE(
      waits_for_device(LaunchApi::kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020));
  EXPECT_FALSE(
      waits_for_device(LaunchApi::kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020));
  EXPECT_FALSE(waits_for_device(LaunchApi::kDriver, CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize));
  EXPECT_FALSE(
      waits_for_device(LaunchApi::kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  // 17 is cuCtxSynchronize in the driver's numbering and cudaGetDevice in the runtime's.
  static_assert(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize == 17);
  EXPECT_FALSE(waits_for_device(LaunchApi::kRuntime, 17));
}

TEST(KernelTracerRegistration, OnePerProcessAndFreedWithItsOwner) {
  StepProfiler prof(quiet(), 0);
  {
    KernelTracer first(prof);
    try {
      KernelTracer second(prof);
      ADD_FAILURE() << "a second tracer was accepted";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("already exists"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(KernelTracer again(prof));  // the first one gave the registration back
}

// Named as NCCL names its kernels (HTA classes a kernel as communication by the "nccl" prefix):
// extern "C", so its traced name is exactly that.
extern "C" __global__ void ncclDevKernel_SimprofTest(float* x) { x[threadIdx.x] += 1.0f; }

// A real CUPTI trace of steps with a runtime launch, a driver-API launch (as NCCL launches) inside
// a collective scope, a copy, a memset and a synchronisation, held to HTA's and Kineto's rules.
TEST_F(GpuTest, ARealTracePassesTheKinetoContract) {
  Stream stream;
  DeviceBuffer<float> x(4096);
  PinnedBuffer<float> host(4096);
  StepProfiler prof(quiet(), 0);
  TraceOptions o;
  o.schedule = Schedule{0, 1, 3, 1, 0};
  o.dir = ::testing::TempDir() + "simprof_cupti_contract";
  o.ranks = RankInfo::explicit_ranks(0, 1);
  TraceSession session(prof, o);
  KernelTracer tracer(prof);
  SIMPROF_REQUIRE_CUPTI(tracer);
  auto joined = session.add_source(&tracer);
  cudaFunction_t fn = nullptr;
  ASSERT_EQ(cudaGetFuncBySymbol(&fn, reinterpret_cast<const void*>(&ncclDevKernel_SimprofTest)),
            cudaSuccess);
  // The driver's cuLaunchKernel through the runtime (the test links no libcuda: CI has none).
  using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                unsigned, unsigned, CUstream, void**, void**);
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found{};
  ASSERT_EQ(
      cudaGetDriverEntryPointByVersion("cuLaunchKernel", &entry, 12000, cudaEnableDefault, &found),
      cudaSuccess);
  ASSERT_EQ(found, cudaDriverEntryPointSuccess);
  const auto cu_launch = reinterpret_cast<LaunchFn>(entry);
  const ProcessGroup world = ProcessGroup::world(1);
  for (int i = 0; i < 4; ++i) {
    auto step = prof.step();
    {
      auto st = prof.stage("physics");
      gt::axpb(x.data(), 4096, 1.0f, stream);
    }
    {
      auto c = collective(prof, CollectiveOp::kAllReduce, 32, DType::kFloat, world);
      float* arg = x.data();
      void* args[] = {&arg};
      ASSERT_EQ(cu_launch(reinterpret_cast<CUfunction>(fn), 1, 1, 1, 32, 1, 1, 0,
                          reinterpret_cast<CUstream>(stream.get()), args, nullptr),
                CUDA_SUCCESS);
    }
    SIMPROF_CUDA_CHECK(cudaMemsetAsync(x.data(), 0, 64, stream));
    x.copy_to_host(host.data(), 4096, stream);
    stream.synchronize();
  }
  ASSERT_EQ(session.files().size(), 1u);
  const std::string raw = simprof::testing::slurp(session.files()[0]);
  const auto bad = simprof::testing::kineto_violations(raw, 0);
  std::string listed;
  for (const auto& b : bad) listed += "\n  " + b;
  EXPECT_TRUE(bad.empty()) << listed;
  const auto j = nlohmann::json::parse(raw);
  // Copies, a memset and a stream sync after each step: the sync rule has something to check.
  EXPECT_EQ(j["otherData"]["causality"].get<std::string>().rfind("ok: ", 0), 0u)
      << j["otherData"]["causality"];
  std::map<std::string, int> cats;
  int nccl = 0, on_loop_thread = 0, launches = 0;
  std::int64_t loop_tid = -1;
  for (const auto& e : j["traceEvents"])
    if (e.value("name", "") == "physics") loop_tid = e["tid"].get<std::int64_t>();
  for (const auto& e : j["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    ++cats[e.value("cat", "")];
    const std::string cat = e.value("cat", "");
    if (cat == "cuda_runtime" || cat == "cuda_driver") {
      ++launches;
      on_loop_thread += e["tid"].get<std::int64_t>() == loop_tid;
    }
    if (cat == "kernel" && e.value("name", "").find("ncclDevKernel_SimprofTest") == 0) {
      ++nccl;
      EXPECT_EQ(e["args"]["Collective name"], "allreduce");
      EXPECT_EQ(e["args"]["In msg nelems"], 32);
    }
  }
  EXPECT_EQ(nccl, 3);
  EXPECT_EQ(cats["cuda_driver"], 3) << "the driver-API launches (cuLaunchKernel)";
  EXPECT_GE(cats["gpu_memcpy"], 3);
  EXPECT_GE(cats["gpu_memset"], 3);
  EXPECT_GE(cats["cuda_sync"], 3);
  EXPECT_EQ(on_loop_thread, launches) << "launches carry the loop thread's id (CUPTI system ids)";
  ASSERT_FALSE(j["deviceProperties"].empty());
  cudaDeviceProp props{};
  ASSERT_EQ(cudaGetDeviceProperties(&props, 0), cudaSuccess);
  EXPECT_EQ(j["deviceProperties"][0]["computeMajor"], props.major) << "the device's own";
  EXPECT_EQ(j["deviceProperties"][0]["name"], std::string(props.name));
  EXPECT_TRUE(j.contains("cuda_driver_version"));
  std::filesystem::remove_all(o.dir);
}
