// SPDX-License-Identifier: MIT
// The graph cache: replays equal to eager runs, warm-up, capacity and updates, recapture,
// StepGraph, a measuring tool's instrumented executable, and the device a cache belongs to. What
// goes wrong in a capture: test_graph_cache_pitfalls.cu.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu_test.hpp"
#include "graph_cache_test.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/graphs/instrumentation.hpp"
#include "simprof/cuda/graphs/step_graph.hpp"
#include "test_util.hpp"

using namespace simprof::cuda;
namespace gt = simprof::cuda::gputest;
using simprof::cuda::gputest::GpuTest;
using simprof::cuda::gputest::GraphCacheTest;

TEST_F(GraphCacheTest, ReplayEqualsEager) {
  Stream stream;
  const int n = 4096;
  DeviceBuffer<float> a(n), b(n);
  gt::fill(a, 1.0f, stream);
  gt::fill(b, 1.0f, stream);
  GraphCache cache(stream);
  for (int step = 0; step < 20; ++step) {
    body(a.data(), n, 10)(stream);          // eager reference
    cache.run({n}, body(b.data(), n, 10));  // warm-up, capture, replays
  }
  EXPECT_EQ(a.to_host(stream), b.to_host(stream));
  const auto& c = cache.counters();
  EXPECT_EQ(c.warmup_runs, 3u);
  EXPECT_EQ(c.captures, 1u);
  EXPECT_EQ(c.instantiations, 1u);
  EXPECT_EQ(c.replays, 17u);  // the capture's own launch and 16 more
  EXPECT_TRUE(cache.captured({n}));
  ASSERT_TRUE(cache.cold_start({n}).has_value());
  EXPECT_GT(cache.cold_start({n})->instantiate_s, 0.0);
}

TEST_F(GraphCacheTest, WarmupCountIsConfigurable) {
  Stream stream;
  DeviceBuffer<float> a(256);
  gt::fill(a, 0.0f, stream);  // read before written otherwise (initcheck)
  GraphCacheOptions o;
  o.warmup = 0;
  GraphCache cache(stream, o);
  cache.run({256}, body(a.data(), 256, 2));
  EXPECT_EQ(cache.counters().warmup_runs, 0u);
  EXPECT_EQ(cache.counters().captures, 1u);
  EXPECT_THROW(GraphCache(stream, GraphCacheOptions{-1}), std::invalid_argument);
  GraphCacheOptions zero;
  zero.capacity = 0;
  EXPECT_THROW(GraphCache(stream, zero), std::invalid_argument);
}

TEST_F(GraphCacheTest, NewShapeBeyondCapacityUpdatesTheLeastRecentlyUsed) {
  Stream stream;
  DeviceBuffer<float> x(262144);
  gt::fill(x, 0.0f, stream);  // read before written otherwise (initcheck)
  GraphCacheOptions o;
  o.warmup = 0;
  o.capacity = 2;
  GraphCache cache(stream, o);
  cache.run({1024}, body(x.data(), 1024, 5));
  cache.run({4096}, body(x.data(), 4096, 5));
  cache.run({1024}, body(x.data(), 1024, 5));  // 4096 is now the least recently used
  EXPECT_EQ(cache.counters().instantiations, 2u);
  cache.run({30000}, body(x.data(), 30000, 5));  // same topology, other grid: update is legal
  EXPECT_EQ(cache.counters().updates, 1u);
  EXPECT_EQ(cache.counters().evictions, 1u);
  EXPECT_EQ(cache.counters().instantiations, 2u);
  EXPECT_TRUE(cache.captured({30000}));
  EXPECT_TRUE(cache.captured({1024}));
  EXPECT_FALSE(cache.captured({4096}));
  EXPECT_TRUE(cache.cold_start({30000})->updated);
  EXPECT_EQ(cache.size(), 2u);
  // The evicted key is warm already: it is captured again at once, updating the LRU (1024).
  cache.run({4096}, body(x.data(), 4096, 5));
  EXPECT_EQ(cache.counters().updates, 2u);
  EXPECT_FALSE(cache.captured({1024}));
}

TEST_F(GraphCacheTest, UpdatedExecutableComputesTheNewShape) {
  Stream stream;
  const int n = 2048;
  DeviceBuffer<float> ref(n), x(n);
  gt::fill(ref, 1.0f, stream);
  gt::fill(x, 1.0f, stream);
  GraphCacheOptions o;
  o.warmup = 0;
  o.capacity = 1;  // every shape change is an update
  GraphCache cache(stream, o);
  for (int i = 0; i < 3; ++i) {
    for (int m : {512, 2048}) {
      body(ref.data(), m, 4)(stream);
      cache.run({m}, body(x.data(), m, 4));
    }
  }
  EXPECT_EQ(ref.to_host(stream), x.to_host(stream));
  EXPECT_EQ(cache.counters().instantiations, 1u);
  EXPECT_EQ(cache.counters().updates, 5u);
}

TEST_F(GraphCacheTest, TopologyChangeIsRefusedThenInstantiated) {
  Stream stream;
  DeviceBuffer<float> x(1024);
  gt::fill(x, 0.0f, stream);  // read before written otherwise (initcheck)
  GraphCacheOptions o;
  o.warmup = 0;
  o.capacity = 1;
  GraphCache cache(stream, o);
  cache.run({1024, 1}, body(x.data(), 1024, 3));
  cache.run({1024, 2}, body(x.data(), 1024, 7));  // 7 nodes against 3: not updatable
  EXPECT_EQ(cache.counters().update_refusals, 1u);
  EXPECT_EQ(cache.counters().instantiations, 2u);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_TRUE(cache.captured({1024, 2}));
}

TEST_F(GraphCacheTest, RecaptureUpdatesInPlace) {
  Stream stream;
  const int n = 1024;
  DeviceBuffer<float> a(n), b(n), ref(n);
  gt::fill(a, 0.0f, stream);
  gt::fill(b, 0.0f, stream);
  gt::fill(ref, 0.0f, stream);
  GraphCacheOptions o;
  o.warmup = 0;
  GraphCache cache(stream, o);
  cache.run({n}, body(a.data(), n, 2));
  cache.recapture({n}, body(b.data(), n, 2));  // the buffer moved: same topology, new pointer
  body(ref.data(), n, 2)(stream);
  EXPECT_EQ(cache.counters().updates, 1u);
  EXPECT_EQ(b.to_host(stream), ref.to_host(stream));
}

TEST_F(GraphCacheTest, StepGraphReplays) {
  Stream stream;
  DeviceBuffer<float> x(512), ref(512);
  gt::fill(x, 2.0f, stream);
  gt::fill(ref, 2.0f, stream);
  StepGraph g(stream, body(x.data(), 512, 3));
  for (int i = 0; i < 10; ++i) {
    g.run();
    body(ref.data(), 512, 3)(stream);
  }
  EXPECT_TRUE(g.captured());
  EXPECT_EQ(g.cache().counters().replays, 7u);
  EXPECT_EQ(x.to_host(stream), ref.to_host(stream));
}

namespace {

__global__ void count_kernel(unsigned* n) { atomicAdd(n, 1u); }

// A measuring tool's contract with GraphCache: while a step is captured it notes where its node
// goes (after the work so far); it adds a counting node to the copy it is asked for; the captured
// graph stays as it is; the instrumented executable runs when the tool asks.
struct CountingTool : GraphInstrumentation {
  unsigned* counter = nullptr;
  cudaGraph_t graph = nullptr;
  std::vector<cudaGraphNode_t> deps;
  bool sample = false;
  int captures = 0, copies = 0;
  bool capturing = false;
  cudaStream_t told = nullptr;  // the stream capture_begins() named
  void capture_begins(cudaStream_t s) noexcept override {
    capturing = true;
    told = s;
  }
  void capture_ends() noexcept override { capturing = false; }
  void note(cudaStream_t s) {
    ASSERT_TRUE(capturing);
    CaptureInfo ci;
    SIMPROF_CUDA_CHECK(capture_info(s, ci));
    ASSERT_EQ(ci.status, cudaStreamCaptureStatusActive);
    graph = ci.graph;
    deps.assign(ci.deps, ci.deps + ci.n_deps);
    ++captures;
  }
  cudaGraph_t instrumented_copy(cudaGraph_t g) noexcept override {
    if (g != graph) return nullptr;
    ++copies;
    cudaGraph_t copy = nullptr;
    if (cudaGraphClone(&copy, g) != cudaSuccess) return nullptr;
    std::vector<cudaGraphNode_t> mine;
    for (const auto n : deps) {
      cudaGraphNode_t c = nullptr;
      cudaGraphNodeFindInClone(&c, n, copy);
      mine.push_back(c);
    }
    cudaKernelNodeParams p{};
    void* args[] = {&counter};
    p.func = reinterpret_cast<void*>(&count_kernel);
    p.gridDim = dim3(1);
    p.blockDim = dim3(1);
    p.kernelParams = args;
    cudaGraphNode_t node = nullptr;
    cudaGraphAddKernelNode(&node, copy, mine.data(), mine.size(), &p);
    return copy;
  }
  bool instrumented_launch() const noexcept override { return sample; }
};

}  // namespace

TEST_F(GraphCacheTest, InstrumentedExecutableRunsOnlyWhenTheToolAsks) {
  Stream stream;
  DeviceBuffer<float> x(256);
  gt::fill(x, 0.0f, stream);  // read before written otherwise (initcheck)
  DeviceBuffer<unsigned> counter(1);
  counter.fill_zero(stream);
  auto tool = std::make_shared<CountingTool>();
  tool->counter = counter.data();
  GraphCacheOptions o;
  o.warmup = 0;
  GraphCache cache(stream, o, tool);
  EXPECT_EQ(cache.instrumentation().get(), tool.get());
  const auto step = [&](cudaStream_t s) {
    gt::axpb(x.data(), 256, 1.0f, s);
    if (capturing(s)) tool->note(s);
  };
  // Capture (not sampled), then replays: sampled, not, sampled, not, not.
  const bool sampled[] = {false, true, false, true, false, false};
  for (const bool on : sampled) {
    tool->sample = on;
    cache.run({1}, step);
  }
  unsigned h = 0;
  counter.copy_to_host(&h, 1, stream);
  stream.synchronize();
  EXPECT_EQ(tool->captures, 1);
  EXPECT_EQ(tool->copies, 1);
  EXPECT_EQ(tool->told, stream.get()) << "capture_begins() did not name the cache's stream";
  EXPECT_EQ(h, 2u) << "the counting node ran outside the sampled launches";
  EXPECT_EQ(cache.counters().instrumented_replays, 2u);
  EXPECT_EQ(cache.counters().replays, 6u);
  EXPECT_GT(cache.cold_start({1})->instrumented_instantiate_s, 0.0);
  // A tool that is gone is never asked: the plain graph runs.
  tool.reset();
  EXPECT_EQ(cache.instrumentation(), nullptr);
  cache.run({1}, step);
  EXPECT_EQ(cache.counters().instrumented_replays, 2u);
  EXPECT_EQ(cache.counters().captures, 1u);
}

// A tool attached to a cache that already replays a key: the key is captured again, once, in place,
// and its sampled steps then run the tool's nodes; detach() stops them without another capture.
TEST_F(GraphCacheTest, ToolAttachedAfterACaptureGetsItsNodesIn) {
  Stream stream;
  DeviceBuffer<float> x(256);
  gt::fill(x, 0.0f, stream);
  DeviceBuffer<unsigned> counter(1);
  counter.fill_zero(stream);
  GraphCacheOptions o;
  o.warmup = 0;
  GraphCache cache(stream, o);
  auto tool = std::make_shared<CountingTool>();
  tool->counter = counter.data();
  const auto step = [&](cudaStream_t s) {
    gt::axpb(x.data(), 256, 1.0f, s);
    if (capturing(s) && tool->capturing) tool->note(s);  // only a cache with the tool says
  };
  tool->sample = true;
  cache.run({1}, step);  // captured without a tool
  cache.run({1}, step);
  EXPECT_EQ(cache.counters().captures, 1u);
  EXPECT_EQ(tool->captures, 0);
  cache.attach(tool);
  cache.run({1}, step);  // captured again, with the tool's node, and launched sampled
  cache.run({1}, step);
  EXPECT_EQ(cache.counters().captures, 2u);
  EXPECT_EQ(cache.counters().updates, 1u) << "the recapture updates the key's executable";
  EXPECT_EQ(tool->captures, 1);
  EXPECT_EQ(tool->copies, 1);
  cache.detach();
  EXPECT_EQ(cache.instrumentation(), nullptr);
  cache.run({1}, step);
  EXPECT_EQ(cache.counters().captures, 2u) << "detach() needs no capture";
  unsigned h = 0;
  counter.copy_to_host(&h, 1, stream);
  stream.synchronize();
  EXPECT_EQ(h, 2u) << "the counting node ran in the two sampled launches after attach() only";
  EXPECT_EQ(cache.counters().instrumented_replays, 2u);
  EXPECT_EQ(cache.counters().replays, 5u);
}

// A cache belongs to one device: the one current when it was made (its stream's).
TEST_F(GpuTest, CacheIsBoundToItsDevice) {
  Stream stream;
  GraphCache cache(stream);
  EXPECT_EQ(cache.device(), current_device());
  EXPECT_EQ(stream_device(stream), current_device());
  int devices = 0;
  SIMPROF_CUDA_CHECK(cudaGetDeviceCount(&devices));
  if (devices < 2)
    GTEST_SKIP() << "needs 2 GPUs to change devices (this machine has " << devices
                 << "); the one-device part passed";
  DeviceBuffer<float> x(256);
  gt::fill(x, 0.0f, stream);  // read before written otherwise (initcheck)
  cache.run({1}, [&](cudaStream_t s) { gt::axpb(x.data(), 256, 1.0f, s); });
  SIMPROF_CUDA_CHECK(cudaSetDevice(1));
  const std::string err = simprof::testing::error_of<std::logic_error>(
      [&] { cache.run({1}, [&](cudaStream_t s) { gt::axpb(x.data(), 256, 1.0f, s); }); });
  EXPECT_EQ(
      err,
      "simprof: GraphCache of device 0 run with device 1 current: a graph captured on one "
      "device is never replayed on another (cudaSetDevice(0) first, or one cache per device)");
  // A tool made with another device current than its stream's is refused, naming both.
  EXPECT_EQ(simprof::testing::error_of<std::invalid_argument>([&] { GraphCache other(stream); }),
            "simprof: GraphCache: the stream is on device 0 but device 1 is current (what it makes "
            "is made on the current device: cudaSetDevice(0) first)");
  SIMPROF_CUDA_CHECK(cudaSetDevice(0));
  stream.synchronize();
}
