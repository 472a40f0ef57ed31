// SPDX-License-Identifier: MIT
// The CUDA-graph techniques on the example engine: the contact solver's while node (pass counts
// match the host-driven loop; the tracer and the per-env timers see every pass), the precision
// checker on device buffers, and the physics + render pipeline.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>

#include "demo_engine/contact_solver.hpp"
#include "demo_engine/cuda_engine.hpp"
#include "demo_engine/mixed_engine.hpp"
#include "demo_engine/render_pipeline.hpp"
#include "gpu_test.hpp"
#include "simprof/cuda/graphs/frame_pipeline.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/graphs/while_loop.hpp"
#include "simprof/cuda/precision/device_comparer.hpp"
#include "simprof/cuda/timing/device_timer_buffer.hpp"
#include "simprof/cuda/trace/kernel_tracer.hpp"
#include "simprof/precision/checker.hpp"
#include "simprof/trace/session.hpp"
#include "trace_test.hpp"

using namespace simprof;
using namespace simprof::cuda;
namespace gt = simprof::cuda::gputest;
using gt::GpuTest;

namespace {

const int kEnvs = gt::scaled(1024, 128);  // smaller under compute-sanitizer
constexpr int kMaxPasses = 32;
constexpr float kTol = 1e-5f;

class SolverTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    if (!conditional_nodes_supported()) GTEST_SKIP() << "conditional nodes need CUDA >= 12.4";
  }
};

GraphCacheOptions no_warmup() {
  GraphCacheOptions o;
  o.warmup = 0;
  return o;
}

struct Solved {
  std::vector<int> passes;
  std::vector<float> state;
};

Solved solve(engine::LoopMode how, int frames) {
  Stream stream;
  engine::CudaEngine eng(engine::Params{}, kEnvs, stream);
  engine::ContactSolver solver(eng, kMaxPasses, kTol);
  engine::SolverRunner runner(solver, how, kEnvs);
  for (int f = 0; f < frames; ++f) runner.frame(stream);
  if (how != engine::LoopMode::kHostDriven) EXPECT_EQ(runner.graphs().counters().captures, 1u);
  if (how == engine::LoopMode::kWhileNode) {
    EXPECT_EQ(runner.loop().counters().captured, 1u);
    EXPECT_GT(runner.graphs().counters().replays, static_cast<std::uint64_t>(frames / 2));
  }
  return {solver.pass_history(stream), eng.snapshot(stream)};
}

std::size_t kernels_named(const Trace& t, const char* name) {
  return static_cast<std::size_t>(std::count_if(t.spans.begin(), t.spans.end(), [&](const Span& s) {
    return s.kind == SpanKind::kKernel && s.name.find(name) != std::string::npos;
  }));
}

}  // namespace

TEST_F(SolverTest, WhileNodePassCountsMatchTheHostDrivenLoop) {
  const Solved host = solve(engine::LoopMode::kHostDriven, 120);
  const Solved node = solve(engine::LoopMode::kWhileNode, 120);
  const Solved fixed = solve(engine::LoopMode::kFixed, 120);
  ASSERT_EQ(host.passes.size(), 120u);
  EXPECT_EQ(node.passes, host.passes);
  EXPECT_EQ(fixed.passes, host.passes) << "fixed passes past convergence change nothing";
  EXPECT_EQ(node.state, host.state) << "same kernels, same numbers";
  EXPECT_EQ(fixed.state, host.state);
  const auto [lo, hi] = std::minmax_element(host.passes.begin(), host.passes.end());
  EXPECT_GE(*lo, 1);
  EXPECT_GT(*hi, *lo) << "the pass count should depend on the state, or this test shows little";
}

TEST_F(SolverTest, TracerAndPerEnvTimersSeeEveryPassOfTheWhileNode) {
  Stream stream;
  engine::CudaEngine eng(engine::Params{}, kEnvs, stream);
  engine::ContactSolver solver(eng, kMaxPasses, kTol);
  engine::SolverRunner runner(solver, engine::LoopMode::kWhileNode, kEnvs);
  std::vector<std::string> labels;
  for (int i = 0; i < kMaxPasses; ++i) labels.push_back("pass " + std::to_string(i));
  DeviceTimerBuffer timers(labels, kEnvs);
  StepProfiler prof(gt::quiet(), kEnvs);
  // Every step its own window; the loop runs until a replayed frame (the 6th on: 3 warm-up runs,
  // then the capture) needs two passes or more, so that the per-pass checks below have passes
  // beyond the first to look at.
  gt::KernelTraceSession kt(prof, Schedule{0, 0, 1, 0, 0});
  SIMPROF_REQUIRE_CUPTI(kt.tracer);
  const std::vector<Trace>& traces = kt.traces;
  int frames = 0, last = 0;
  for (; frames < 120 && last < 2; ++frames) {
    {
      auto step = prof.step();
      auto st = prof.stage("physics");
      runner.frame(stream, &timers);
    }
    if (frames >= 5) last = std::abs(solver.pass_history(stream).back());
  }
  ASSERT_GE(last, 2) << "no replayed frame of " << frames << " needed a second pass";
  ASSERT_EQ(traces.size(), static_cast<std::size_t>(frames));
  EXPECT_EQ(runner.graphs().counters().replays, static_cast<std::uint64_t>(frames - 3))
      << "frame 3 captured and launched, the later ones replayed";
  EXPECT_EQ(solver.pass_history(stream).size(), static_cast<std::size_t>(frames));
  EXPECT_EQ(kernels_named(traces.back(), "project_kernel"), static_cast<std::size_t>(last))
      << "one traced kernel per pass of the device-side loop";
  EXPECT_EQ(kernels_named(traces.back(), "check_kernel"), static_cast<std::size_t>(last));
  EXPECT_EQ(kernels_named(traces.back(), "predict_kernel"), 1u);
  EXPECT_EQ(traces.back().dropped, 0u);

  const TimerFrame frame = timers.read(stream);
  for (int e = 0; e < kEnvs; ++e) EXPECT_GT(frame.ticks(0, e), 0u) << "every env runs pass 0";
  for (int row = 1; row < last; ++row) {
    int timed = 0;
    for (int e = 0; e < kEnvs; ++e) timed += frame.ticks(row, e) != 0;
    EXPECT_GT(timed, 0) << "pass " << row << " ran, so some env was timed in it";
  }
  for (int row = last; row < kMaxPasses; ++row)
    for (int e = 0; e < kEnvs; ++e) ASSERT_EQ(frame.ticks(row, e), 0u) << "pass " << row;
}

TEST_F(GpuTest, PrecisionCheckerPassesIdenticalBuffersAndFindsKnownErrors) {
  Stream stream;
  const engine::Params p;
  engine::CudaEngine ref(p, kEnvs, stream);
  engine::MixedEngine same(p, kEnvs, engine::Storage::kFp32, stream);
  GraphCache cache(stream, no_warmup());
  for (int i = 0, steps = gt::scaled(50, 10); i < steps; ++i) {
    cache.run({kEnvs, 0}, [&](cudaStream_t s) { ref.enqueue_solver(s, nullptr); });
    cache.run({kEnvs, 1}, [&](cudaStream_t s) { same.enqueue_step(s); });
  }
  const std::vector<float> r = ref.snapshot(stream);
  std::vector<float> v = same.snapshot(stream);
  PrecisionChecker check;
  const auto& ok = check.compare("state", QuantityClass::kState, r.data(), v.data(), r.size());
  EXPECT_TRUE(ok.passed);
  EXPECT_EQ(ok.rel_l2, 0.0) << "FP32 storage through the mixed harness adds no error";
  EXPECT_EQ(ok.max_abs, 0.0);

  // Known errors, put into the device state: +0.01 on one position, a NaN in one velocity.
  const std::size_t n = ref.bodies();
  const engine::State s = ref.state();
  float x = r[17] + 0.01f;
  SIMPROF_CUDA_CHECK(cudaMemcpyAsync(s.px + 17, &x, sizeof(float), cudaMemcpyHostToDevice, stream));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  SIMPROF_CUDA_CHECK(
      cudaMemcpyAsync(s.vx + 5, &nan, sizeof(float), cudaMemcpyHostToDevice, stream));
  const std::vector<float> bad = ref.snapshot(stream);
  check.clear();
  const auto& pos = check.compare("positions", QuantityClass::kState, r.data(), bad.data(), 3 * n);
  EXPECT_NEAR(pos.max_abs, 0.01, 1e-6);
  EXPECT_EQ(pos.nan, 0u);
  const auto& vel = check.compare("velocities", QuantityClass::kState, r.data() + 3 * n,
                                  bad.data() + 3 * n, 3 * n);
  EXPECT_EQ(vel.nan, 1u);
  EXPECT_FALSE(vel.passed);
  EXPECT_FALSE(check.all_passed());

  // The same sums reduced on the device.
  DeviceComparer cmp;
  const DeviceBuffer<float> r_dev = [&] {
    DeviceBuffer<float> b(r.size());
    b.copy_from_host(r.data(), r.size(), stream);
    return b;
  }();
  const ErrorSums host_pos = error_sums(r.data(), bad.data(), 3 * n);
  ErrorSums dev_pos = cmp.sums(r_dev.data(), s.px, Dtype::kF32, n, stream);
  dev_pos += cmp.sums(r_dev.data() + n, s.py, Dtype::kF32, n, stream);
  dev_pos += cmp.sums(r_dev.data() + 2 * n, s.pz, Dtype::kF32, n, stream);
  EXPECT_EQ(dev_pos.count, host_pos.count);
  EXPECT_NEAR(dev_pos.diff2, host_pos.diff2, 1e-12 * host_pos.ref2);
  EXPECT_NEAR(dev_pos.ref2, host_pos.ref2, 1e-12 * host_pos.ref2);
  EXPECT_EQ(dev_pos.max_abs, host_pos.max_abs);
  const ErrorSums dev_vx = cmp.sums(r_dev.data() + 3 * n, s.vx, Dtype::kF32, n, stream);
  EXPECT_EQ(dev_vx.nan, 1u);
  // A non-finite reference is refused, naming where.
  const ErrorSums bad_ref = cmp.sums(s.vx, r_dev.data(), Dtype::kF32, n, stream);
  EXPECT_EQ(bad_ref.bad_reference, 1u);
  EXPECT_EQ(bad_ref.first_bad_reference, 5u);
  EXPECT_THROW(check.record("vx", QuantityClass::kState, bad_ref), std::invalid_argument);

  // Reduced storage: FP16 keeps more than BF16, and both lose something; the device reduction reads
  // the 16-bit arrays directly and agrees with the host.
  double err[2];
  int i = 0;
  for (engine::Storage st : {engine::Storage::kFp16, engine::Storage::kBf16}) {
    engine::CudaEngine r2(p, kEnvs, stream);
    engine::MixedEngine m(p, kEnvs, st, stream);
    for (int k = 0, steps = gt::scaled(20, 5); k < steps; ++k) {
      r2.enqueue_solver(stream, nullptr);
      m.enqueue_step(stream);
    }
    const auto a = r2.snapshot(stream), b = m.snapshot(stream);
    err[i++] =
        check.compare(engine::to_string(st), QuantityClass::kState, a.data(), b.data(), 3 * n)
            .rel_l2;
    const engine::State rs = r2.state();
    ErrorSums dev = cmp.sums(rs.px, m.array(0), m.dtype(), n, stream);
    dev += cmp.sums(rs.py, m.array(1), m.dtype(), n, stream);
    dev += cmp.sums(rs.pz, m.array(2), m.dtype(), n, stream);
    const ErrorSums host = error_sums(a.data(), b.data(), 3 * n);
    EXPECT_NEAR(dev.diff2, host.diff2, 1e-9 * host.diff2) << engine::to_string(st);
    EXPECT_EQ(dev.max_abs, host.max_abs) << engine::to_string(st);
  }
  EXPECT_GT(err[0], 0.0);
  EXPECT_GT(err[1], err[0]) << "bf16 keeps 8 bits of mantissa, fp16 11";
}

TEST_F(GpuTest, DualGraphDrawsTheSameImagesOverlappedAndSerialised) {
  engine::Params p;
  p.image_width = p.image_height = 16;
  auto images = [&](bool overlap) {
    Stream init;
    engine::CudaEngine eng(p, kEnvs, init);
    FramePipelineOptions o;
    o.overlap = overlap;
    engine::RenderPipeline pipe(eng, o);
    for (int k = 0; k < 40; ++k) pipe.submit();
    pipe.drain();
    EXPECT_EQ(pipe.frames().latencies().size(), 40u);
    return pipe.depth();
  };
  // The reference: the plain loop, physics then rendering from the live state, one stream.
  Stream stream;
  engine::CudaEngine eng(p, kEnvs, stream);
  const engine::State s = eng.state();
  for (int k = 0; k < 40; ++k) {
    eng.enqueue_solver(stream, nullptr);
    eng.enqueue_render_from(stream, s.px, s.py, s.pz);
  }
  const std::vector<float> want = eng.depth(stream);
  EXPECT_EQ(images(false), want);
  EXPECT_EQ(images(true), want);
}
