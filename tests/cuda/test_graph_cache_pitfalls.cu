// SPDX-License-Identifier: MIT
// The graph cache's capture pitfalls: each gets a named diagnosis, a clean end of the capture, one
// warning and an eager fallback (or, without the fallback, the diagnosis thrown); and the
// classification itself, which needs no GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gpu_test.hpp"
#include "graph_cache_test.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"

using namespace simprof::cuda;
namespace gt = simprof::cuda::gputest;
using simprof::cuda::gputest::GraphCacheTest;

// --- pitfalls: each gets a named diagnosis, a clean end of the capture, one warning and an eager
// fallback that still executes the step once per run.

namespace {

struct PitfallCase {
  const char* name;
  CapturePitfall expected;
  std::function<void(cudaStream_t, float*, int)> bad;  // runs inside the body
};

}  // namespace

class Pitfalls : public GraphCacheTest, public ::testing::WithParamInterface<int> {};

static std::vector<PitfallCase> pitfall_cases() {
  return {
      {"stream_sync", CapturePitfall::kSynchronization,
       [](cudaStream_t s, float*, int) { SIMPROF_CUDA_CHECK(cudaStreamSynchronize(s)); }},
      {"device_sync", CapturePitfall::kSynchronization,
       [](cudaStream_t, float*, int) { SIMPROF_CUDA_CHECK(cudaDeviceSynchronize()); }},
      {"sync_copy", CapturePitfall::kSynchronousCopy,
       [](cudaStream_t, float* x, int) {
         float h = 0;
         SIMPROF_CUDA_CHECK(cudaMemcpy(&h, x, sizeof(float), cudaMemcpyDeviceToHost));
       }},
      {"legacy_stream", CapturePitfall::kSynchronousCopy,
       [](cudaStream_t, float* x, int n) {
         simprof::cuda::gputest::axpb_kernel<<<1, 32>>>(x, n < 32 ? n : 32, 1.0f);
         SIMPROF_CUDA_CHECK_LAUNCH("axpb_kernel on the legacy stream");
       }},
      {"allocation", CapturePitfall::kAllocation,
       [](cudaStream_t, float*, int) {
         void* p = nullptr;
         SIMPROF_CUDA_CHECK(cudaMalloc(&p, 1024));
         cudaFree(p);
       }},
      {"wrong_thread", CapturePitfall::kWrongThread,
       [](cudaStream_t s, float*, int) {
         cudaError_t e = cudaSuccess;
         std::thread t([&] {
           cudaGraph_t g = nullptr;
           e = cudaStreamEndCapture(s, &g);
           if (g) cudaGraphDestroy(g);
         });
         t.join();
         if (e != cudaSuccess)
           simprof::cuda::throw_cuda_error(e, "cudaStreamEndCapture from another thread", __FILE__,
                                           __LINE__);
       }},
      {"invalidated", CapturePitfall::kInvalidated,
       [](cudaStream_t s, float* x, int n) {
         cudaStreamSynchronize(s);  // unchecked: the capture is invalidated, the body goes on
         simprof::cuda::gputest::axpb_kernel<<<1, 32, 0, s>>>(x, n < 32 ? n : 32, 1.0f);
       }},
  };
}

TEST_P(Pitfalls, DiagnosedEndedCleanlyAndRunEagerly) {
  const PitfallCase c = pitfall_cases()[GetParam()];
  SCOPED_TRACE(c.name);
  Stream stream;
  const int n = 1024;
  DeviceBuffer<float> x(n), ref(n);
  gt::fill(x, 1.0f, stream);
  gt::fill(ref, 1.0f, stream);
  GraphCacheOptions o;
  o.warmup = 1;
  GraphCache cache(stream, o);
  cache.set_logger(logger);
  bool capture_attempted = false;
  auto step = [&](cudaStream_t s) {
    simprof::cuda::gputest::axpb(x.data(), n, 1.0f, s);
    cudaStreamCaptureStatus st;
    SIMPROF_CUDA_CHECK(cudaStreamIsCapturing(s, &st));
    if (st != cudaStreamCaptureStatusNone) {  // misbehave only while captured
      capture_attempted = true;
      c.bad(s, x.data(), n);
    }
    simprof::cuda::gputest::axpb(x.data(), n, 2.0f, s);
  };
  for (int i = 0; i < 4; ++i) {
    cache.run({n}, step);
    simprof::cuda::gputest::axpb(ref.data(), n, 1.0f, stream);
    simprof::cuda::gputest::axpb(ref.data(), n, 2.0f, stream);
  }
  ASSERT_TRUE(capture_attempted);
  EXPECT_FALSE(capturing(stream)) << "the stream was left capturing";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "an error was left pending";
  EXPECT_TRUE(cache.fell_back({n}));
  EXPECT_FALSE(cache.captured({n}));
  const auto d = cache.diagnosis({n});
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->pitfall, c.expected) << to_string(d->pitfall) << ": " << d->message;
  EXPECT_NE(d->message.find(std::string(to_string(c.expected))), std::string::npos) << d->message;
  // Warned once, however many runs follow.
  const std::string text = log.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_NE(text.find("warning"), std::string::npos) << text;
  EXPECT_EQ(cache.counters().failed_captures, 1u);
  EXPECT_EQ(cache.counters().eager_runs, 3u);
  // Every run still executed the step exactly once.
  EXPECT_EQ(x.to_host(stream), ref.to_host(stream));
}

INSTANTIATE_TEST_SUITE_P(GraphCache, Pitfalls, ::testing::Range(0, 7),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::string(pitfall_cases()[i.param].name);
                         });

TEST_F(GraphCacheTest, NoFallbackThrowsTheDiagnosis) {
  Stream stream;
  DeviceBuffer<float> x(256);
  gt::fill(x, 0.0f, stream);  // read before written otherwise (initcheck)
  GraphCacheOptions o;
  o.warmup = 0;
  o.eager_fallback = false;
  GraphCache cache(stream, o);
  try {
    cache.run({256}, [&](cudaStream_t s) { SIMPROF_CUDA_CHECK(cudaStreamSynchronize(s)); });
    FAIL() << "expected CaptureError";
  } catch (const CaptureError& e) {
    EXPECT_EQ(e.diagnosis().pitfall, CapturePitfall::kSynchronization);
    EXPECT_NE(std::string(e.what()).find("cudaStreamSynchronize(s)"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("cudaErrorStreamCapture"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(capturing(stream));
}

TEST(CaptureDiagnosis, ClassifiesWithoutAGpu) {
  const auto diagnose = [](cudaError_t code, const char* call) {
    return diagnose_capture(code, classify_call(call), call).pitfall;
  };
  EXPECT_EQ(diagnose(cudaErrorStreamCaptureUnsupported, "cudaStreamSynchronize(s)"),
            CapturePitfall::kSynchronization);
  EXPECT_EQ(diagnose(cudaErrorStreamCaptureUnsupported, "cudaMalloc(&p, n)"),
            CapturePitfall::kAllocation);
  EXPECT_EQ(diagnose(cudaErrorStreamCaptureUnsupported, "::cudaMemcpy(a, b, n, k)"),
            CapturePitfall::kSynchronousCopy);
  EXPECT_EQ(diagnose(cudaErrorStreamCaptureImplicit, ""), CapturePitfall::kSynchronousCopy);
  EXPECT_EQ(diagnose(cudaErrorStreamCaptureWrongThread, ""), CapturePitfall::kWrongThread);
  EXPECT_EQ(diagnose(cudaErrorStreamCaptureInvalidated, ""), CapturePitfall::kInvalidated);
  EXPECT_EQ(diagnose(cudaErrorStreamCaptureUnsupported, ""), CapturePitfall::kUnsupported);
  // By identity, not by text: an Async copy, or a call whose arguments mention a sync, is neither.
  EXPECT_EQ(diagnose(cudaErrorStreamCaptureUnsupported, "cudaMemcpyAsync(a, b, n, k, s)"),
            CapturePitfall::kUnsupported);
  EXPECT_EQ(diagnose(cudaErrorStreamCaptureUnsupported, "cudaMallocAsync(&p, n, s)"),
            CapturePitfall::kUnsupported);
  EXPECT_EQ(diagnose(cudaErrorStreamCaptureUnsupported, "my_wrapper(cudaStreamSynchronize)"),
            CapturePitfall::kUnsupported);
  EXPECT_EQ(diagnose(cudaErrorStreamCaptureUnsupported, "cudaMalloc<float>(&p, n)"),
            CapturePitfall::kAllocation);
  EXPECT_EQ(diagnose(cudaErrorStreamCaptureUnsupported, "(cudaStreamSynchronize(s))"),
            CapturePitfall::kSynchronization);
  EXPECT_EQ(diagnose(cudaErrorStreamCaptureUnsupported, "cudaMemcpyToArray(a, 0, 0, b, n, k)"),
            CapturePitfall::kSynchronousCopy);
  EXPECT_EQ(diagnose(cudaErrorStreamCaptureUnsupported, "cudaFreeAsync(p, s)"),
            CapturePitfall::kUnsupported);
  // SIMPROF_CUDA_CHECK decides the identity at compile time; CudaError carries it.
  static_assert(classify_call("cudaDeviceSynchronize()") == CudaCall::kSynchronize);
  EXPECT_EQ(CudaError(cudaErrorInvalidValue, "cudaFree(p)", __FILE__, __LINE__).kind(),
            CudaCall::kAllocation);
}
