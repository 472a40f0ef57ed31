// SPDX-License-Identifier: MIT
// The CUDA engine computes what the CPU engine computes, eagerly and replayed from a graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "demo_engine/cpu_engine.hpp"
#include "demo_engine/cuda_engine.hpp"
#include "gpu_test.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"

using simprof::cuda::gputest::GpuTest;
using namespace simprof;

namespace {
double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}
}  // namespace

TEST_F(GpuTest, CpuAndCudaEnginesAgree) {
  // Tolerance: both sides compute in float with FMA contraction off and IEEE sqrt/division, in the
  // same order, so they should agree to the bit; 1e-4 m (and m/s) leaves room for a libm sqrtf that
  // differs in the last place, amplified by contacts over 500 steps.
  const engine::Params p;
  const int n = 256;
  cuda::Stream stream;
  engine::CpuEngine cpu(p, n, 99);
  engine::CudaEngine gpu(p, n, stream, 99);
  EXPECT_EQ(cpu.snapshot(), gpu.snapshot(stream)) << "initial states differ";
  for (int i = 0, steps = cuda::gputest::scaled(500, 50); i < steps; ++i) {
    cpu.step();
    gpu.enqueue_step(stream);
  }
  const double d = max_abs_diff(cpu.snapshot(), gpu.snapshot(stream));
  RecordProperty("max_abs_diff_after_500_steps", std::to_string(d));
  EXPECT_LE(d, 1e-4);
}

TEST_F(GpuTest, GraphReplayEqualsEagerEngine) {
  const engine::Params p;
  const int n = 1024;
  cuda::Stream stream;
  engine::CudaEngine eager(p, n, stream, 5), replayed(p, n, stream, 5);
  cuda::GraphCache cache(stream);
  for (int i = 0; i < 50; ++i) {
    eager.enqueue_step(stream);
    cache.run({n}, [&](cudaStream_t s) { replayed.enqueue_step(s); });
  }
  EXPECT_EQ(eager.snapshot(stream), replayed.snapshot(stream));
  EXPECT_EQ(cache.counters().replays, 47u);
}
