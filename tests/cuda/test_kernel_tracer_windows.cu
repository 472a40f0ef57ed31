// SPDX-License-Identifier: MIT
// CUPTI kernel tracing on the GPU: windows that end while the loop goes on (background hand-over)
// or while their work is still running on the device. Each test runs in its own process (ctest), so
// each gets CUPTI to itself.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "gpu_test.hpp"
#include "kernel_tracer_test.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/trace/kernel_tracer.hpp"
#include "simprof/trace/causality.hpp"
#include "simprof/trace/session.hpp"
#include "trace_test.hpp"

using namespace simprof;
using namespace simprof::cuda;
namespace gt = simprof::cuda::gputest;
using gt::GpuTest;
using gt::of_kind;
using gt::quiet;

// TraceOptions::background: the window ends at its last launch, not when the device catches up.
// The gate keeps every kernel of the window (and of the steps after it) waiting on the device while
// the loop goes on; the session's writer waits for the window's kernels, and the trace holds those
// and nothing launched after the window's last step.
TEST_F(GpuTest, BackgroundWindowEndsAtItsLastLaunchWhileTheLoopGoesOn) {
  SIMPROF_SKIP_GATED_UNDER_SANITIZER();
  Stream stream;
  DeviceBuffer<float> x(4096);
  StepProfiler prof(quiet(), 0);
  TraceOptions o;
  o.schedule = Schedule{0, 0, 2, 1, 0};
  o.background = true;
  gt::KernelTraceSession kt(prof, o);
  SIMPROF_REQUIRE_CUPTI(kt.tracer);
  TraceSession& session = kt.session;
  const std::vector<Trace>& traces = kt.traces;
  GraphCacheOptions go;
  go.warmup = 0;
  GraphCache cache(stream, go);
  auto body = [&](cudaStream_t s) {
    for (int i = 0; i < 5; ++i) gt::axpb(x.data(), 4096, 1.0f, s);
  };
  cache.run({1}, body);  // captured (and run once) before the window
  stream.synchronize();
  gt::Gate gate;
  gate.hold(stream);
  for (int i = 0; i < 6; ++i) {  // steps 0-1 traced, 2-5 after the window
    auto step = prof.step();
    cache.run({1}, body);
    for (int k = 0; k < 3; ++k) gt::axpb(x.data(), 4096, 1.0f, stream);
  }
  EXPECT_EQ(session.windows(), 0u) << "the writer waits for the window's kernels, held by the gate";
  EXPECT_TRUE(traces.empty());
  gate.open();
  session.wait();
  ASSERT_EQ(traces.size(), 1u);
  const auto kernels = of_kind(traces[0], SpanKind::kKernel);
  EXPECT_EQ(kernels.size(), 2u * (5 + 3)) << "the window's kernels, none launched after it";
  std::size_t replayed = 0;
  for (const auto* k : kernels) replayed += k->get<KernelPayload>().graph_id > 0;
  EXPECT_EQ(replayed, 2u * 5);
  EXPECT_EQ(traces[0].dropped, 0u);
  EXPECT_EQ(session.files().size(), 0u);  // the handler took it
  const CausalityReport physics = check_causality(traces[0]);
  EXPECT_TRUE(physics.ok()) << physics.summary();
}

// A window whose work is still running on the device when its last step ends (a long kernel
// launched in the warm-up step holds the stream while the loop launches every later step; in the
// synchronous mode the window's end then waits for it on the loop's thread): the trace holds
// exactly the window's kernels, none of the warm-up's (still running when the window began) nor of
// the steps after it (launched while the window was being collected), each as long as it ran, one
// after another on the stream. Background and synchronous hand-over, eager and replayed, 1 and 100
// kernels a step.
struct InFlightCase {
  bool background, replayed;
  int kernels;
};

class WindowEndsWithWorkInFlight : public GpuTest,
                                   public ::testing::WithParamInterface<InFlightCase> {};

TEST_P(WindowEndsWithWorkInFlight, HoldsExactlyTheWindowsKernelsAsTheyRan) {
  SIMPROF_SKIP_GATED_UNDER_SANITIZER();
  const InFlightCase c = GetParam();
  constexpr unsigned long long kSpinNs = 20'000;  // each kernel's length on the device
  Stream stream;
  StepProfiler prof(quiet(), 0);
  TraceOptions o;
  o.schedule = Schedule{0, 1, 3, 1, 0};  // step 0 warm-up, steps 1-3 traced, 4-6 after
  o.background = c.background;
  gt::KernelTraceSession kt(prof, o);
  SIMPROF_REQUIRE_CUPTI(kt.tracer);
  TraceSession& session = kt.session;
  const std::vector<Trace>& traces = kt.traces;
  GraphCacheOptions go;
  go.warmup = 0;
  GraphCache cache(stream, go);
  auto body = [&](cudaStream_t s) {
    for (int i = 0; i < c.kernels; ++i) gt::spin(kSpinNs, s);
  };
  auto run_step = [&] {
    if (c.replayed)
      cache.run({1}, body);
    else
      body(stream);
  };
  if (c.replayed) cache.run({1}, body);  // captured (and run once) before the window
  stream.synchronize();
  bool in_flight_at_window_end = false;
  for (int i = 0; i < 7; ++i) {
    auto step = prof.step();
    if (i == 0) gt::spin(50'000'000, stream);  // 50 ms: far longer than launching 7 steps takes
    run_step();
    if (i == 3) in_flight_at_window_end = cudaStreamQuery(stream) == cudaErrorNotReady;
  }
  EXPECT_TRUE(in_flight_at_window_end) << "the window's work is queued behind the warm-up's spin";
  session.wait();
  ASSERT_EQ(traces.size(), 1u);
  const auto kernels = of_kind(traces[0], SpanKind::kKernel);
  EXPECT_EQ(kernels.size(), 3u * static_cast<std::size_t>(c.kernels))
      << "the window's kernels: none of the warm-up's, none launched after the window";
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::set<std::uint64_t> correlations;
  for (const auto* k : kernels) {
    EXPECT_EQ(k->name, "simprof::cuda::gputest::spin_kernel(unsigned long long)");
    EXPECT_EQ(k->get<KernelPayload>().graph_id > 0, c.replayed);
    correlations.insert(k->correlation);
    EXPECT_GE(k->duration_ns(), static_cast<std::int64_t>(kSpinNs) * 95 / 100)
        << "a kernel spins that long";
    SIMPROF_TIMING EXPECT_LT(k->duration_ns(), static_cast<std::int64_t>(kSpinNs) + 20'000)
        << "a kernel written longer than it ran";
  }
  EXPECT_EQ(correlations.size(), c.replayed ? 3u : 3u * static_cast<std::size_t>(c.kernels))
      << "a replay's kernels share its launch's correlation";
  EXPECT_EQ(traces[0].dropped, 0u);
  const CausalityReport physics = check_causality(traces[0]);
  EXPECT_TRUE(physics.ok()) << physics.summary();
  if (!physics.ok())  // what the window's synchronisations were, and the calls that made them
    for (const auto* y : of_kind(traces[0], SpanKind::kSync))
      for (const auto* l : of_kind(traces[0], SpanKind::kLaunch))
        if (l->correlation == y->correlation)
          ADD_FAILURE() << "sync " << to_string(y->get<SyncPayload>().sync) << " stream "
                        << y->stream << " by " << l->name;
  ASSERT_EQ(physics.tracks.size(), 1u);
  EXPECT_EQ(physics.tracks[0].overlaps, 0u);
  EXPECT_LE(physics.tracks[0].busy_ns, physics.tracks[0].extent_ns);
  EXPECT_EQ(traces[0].metadata.at("causality").rfind("ok: ", 0), 0u)
      << traces[0].metadata.at("causality");
}

INSTANTIATE_TEST_SUITE_P(
    BackgroundAndSync, WindowEndsWithWorkInFlight,
    ::testing::Values(InFlightCase{true, true, 1}, InFlightCase{true, true, 100},
                      InFlightCase{true, false, 1}, InFlightCase{true, false, 100},
                      InFlightCase{false, true, 1}, InFlightCase{false, true, 100},
                      InFlightCase{false, false, 1}, InFlightCase{false, false, 100}),
    [](const ::testing::TestParamInfo<InFlightCase>& i) {
      return std::string(i.param.background ? "Background" : "Sync") +
             (i.param.replayed ? "Replayed" : "Eager") + std::to_string(i.param.kernels);
    });
