// SPDX-License-Identifier: MIT
// WhileLoop: captured as a conditional while node, and host-driven when not capturing.
#include <gtest/gtest.h>

#include <initializer_list>

#include "gpu_test.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/graphs/while_loop.hpp"
#include "test_util.hpp"

using namespace simprof;
using namespace simprof::cuda;
namespace gt = simprof::cuda::gputest;
using gt::GpuTest;

namespace {

// counter[0] counts iterations; counter[1] is the target. Also logs the iteration into log[].
__global__ void count_up(int* counter, int* log, LoopCondition c) {
  const int it = ++counter[0];
  log[it - 1] = it;
  set_condition(c, it < counter[1]);
}

__global__ void reset_counter(int* counter, int target) {
  counter[0] = 0;
  counter[1] = target;
}

int read(const DeviceBuffer<int>& b, int i, cudaStream_t s) {
  return b.to_host(s)[static_cast<std::size_t>(i)];
}

// read() copies whole buffers to the host: every element written first (compute-sanitizer's
// initcheck reports copies of never-written device memory).
void zero(cudaStream_t s, std::initializer_list<DeviceBuffer<int>*> buffers) {
  for (DeviceBuffer<int>* b : buffers) b->fill_zero(s);
}

}  // namespace

TEST(WhileLoopInput, RejectsANonPositiveHostBound) {
  std::string why;
  if (!device_available(&why)) GTEST_SKIP() << "GPU test skipped: " << why;
  EXPECT_NE(simprof::testing::error_of<std::exception>([] {
              WhileLoop loop(0);
            }).find("max_host_iterations = 0"),
            std::string::npos);
}

TEST_F(GpuTest, HostDrivenLoopRunsUntilTheBodySaysStop) {
  if (!conditional_nodes_supported()) GTEST_SKIP() << "conditional nodes need CUDA >= 12.4";
  Stream stream;
  DeviceBuffer<int> counter(2), log(64);
  zero(stream, {&counter, &log});
  WhileLoop loop;
  reset_counter<<<1, 1, 0, stream>>>(counter.data(), 7);
  const int n = loop.enqueue(stream, [&](cudaStream_t s, const LoopCondition& c) {
    count_up<<<1, 1, 0, s>>>(counter.data(), log.data(), c);
  });
  EXPECT_EQ(n, 7);
  EXPECT_EQ(read(counter, 0, stream), 7);
  EXPECT_EQ(loop.counters().host_driven, 1u);
  EXPECT_EQ(loop.counters().host_iterations, 7u);
  // do-while: a target already reached still runs the body once.
  reset_counter<<<1, 1, 0, stream>>>(counter.data(), 0);
  EXPECT_EQ(loop.enqueue(stream,
                         [&](cudaStream_t s, const LoopCondition& c) {
                           count_up<<<1, 1, 0, s>>>(counter.data(), log.data(), c);
                         }),
            1);
}

TEST_F(GpuTest, CapturedLoopIteratesOnTheDeviceAtEveryReplay) {
  if (!conditional_nodes_supported()) GTEST_SKIP() << "conditional nodes need CUDA >= 12.4";
  Stream stream;
  DeviceBuffer<int> counter(2), log(64), target(1);
  zero(stream, {&counter, &log, &target});
  WhileLoop loop;
  GraphCacheOptions o;
  o.warmup = 0;
  GraphCache cache(stream, o);
  int host_target = 5;
  // The target comes from device memory so one graph serves every value.
  auto body = [&](cudaStream_t s) {
    SIMPROF_CUDA_CHECK(cudaMemcpyAsync(counter.data() + 1, target.data(), sizeof(int),
                                       cudaMemcpyDeviceToDevice, s));
    SIMPROF_CUDA_CHECK(cudaMemsetAsync(counter.data(), 0, sizeof(int), s));
    loop.enqueue(s, [&](cudaStream_t b, const LoopCondition& c) {
      count_up<<<1, 1, 0, b>>>(counter.data(), log.data(), c);
    });
  };
  for (int t : {5, 12, 1, 30}) {
    host_target = t;
    target.copy_from_host(&host_target, 1, stream);
    cache.run({1}, body);
    EXPECT_EQ(read(counter, 0, stream), t) << "target " << t;
    EXPECT_EQ(read(log, t - 1, stream), t);
  }
  EXPECT_TRUE(cache.captured({1}));
  EXPECT_EQ(cache.counters().captures, 1u) << "one capture, then replays";
  EXPECT_EQ(cache.counters().replays, 4u) << "the captured run launches too";
  EXPECT_EQ(loop.counters().captured, 1u);
  EXPECT_EQ(loop.counters().host_driven, 0u);
}

TEST_F(GpuTest, HostDrivenLoopThatNeverStopsIsCaughtAtItsBound) {
  if (!conditional_nodes_supported()) GTEST_SKIP() << "conditional nodes need CUDA >= 12.4";
  Stream stream;
  DeviceBuffer<int> counter(2), log(64);
  zero(stream, {&counter, &log});
  WhileLoop loop(10);
  reset_counter<<<1, 1, 0, stream>>>(counter.data(), 1000);
  const std::string err = simprof::testing::error_of<std::exception>([&] {
    loop.enqueue(stream, [&](cudaStream_t s, const LoopCondition& c) {
      count_up<<<1, 1, 0, s>>>(counter.data(), log.data(), c);
    });
  });
  EXPECT_NE(err.find("ran 10 iterations"), std::string::npos) << err;
}
