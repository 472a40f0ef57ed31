// SPDX-License-Identifier: MIT
// The graph cache tests' fixture (test_graph_cache*.cu): a GPU test whose cache logs to a string.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>

#include "gpu_test.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "test_util.hpp"

namespace simprof::cuda::gputest {

class GraphCacheTest : public GpuTest {
 protected:
  std::ostringstream log;
  std::shared_ptr<spdlog::logger> logger;
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    logger = simprof::testing::capture_logger(log, "graph-test", "%l %v");
  }
  // A step of `k` kernels over n floats.
  static GraphCache::Body body(float* x, int n, int k) {
    return [=](cudaStream_t s) {
      for (int i = 0; i < k; ++i)
        simprof::cuda::gputest::axpb(x, n, 0.5f + static_cast<float>(i), s);
    };
  }
  bool capturing(cudaStream_t s) {
    cudaStreamCaptureStatus st;
    SIMPROF_CUDA_CHECK(cudaStreamIsCapturing(s, &st));
    return st != cudaStreamCaptureStatusNone;
  }
};

}  // namespace simprof::cuda::gputest
