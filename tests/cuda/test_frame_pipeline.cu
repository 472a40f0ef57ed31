// SPDX-License-Identifier: MIT
// FramePipeline: the consumer (render) of frame k reads exactly what the producer (physics) of
// frame k published: never a slot half-written by frame k + 2, never a stale one.
#include <gtest/gtest.h>

#include "gpu_test.hpp"
#include "simprof/cuda/graphs/frame_pipeline.hpp"
#include "test_util.hpp"

using namespace simprof;
using namespace simprof::cuda;
namespace gt = simprof::cuda::gputest;
using gt::GpuTest;

namespace {

// Floats per slot: large, so that writing one takes a while (smaller under compute-sanitizer).
const int kN = gt::scaled(1 << 20, 1 << 14);

__global__ void bump(int* counter) { ++*counter; }

// Writes the producer's frame number into every element, a few blocks striding slowly.
__global__ void fill_slot(float* slot, int n, const int* frame) {
  const float v = static_cast<float>(*frame);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    slot[i] = v;
}

// Counts the elements that differ from the consumer's own frame number.
__global__ void check_slot(const float* slot, int n, const int* frame, unsigned* mismatches) {
  const float want = static_cast<float>(*frame);
  unsigned bad = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    bad += slot[i] != want;
  if (bad) atomicAdd(mismatches, bad);
}

struct Fixture {
  DeviceBuffer<float> slots[2] = {DeviceBuffer<float>(kN), DeviceBuffer<float>(kN)};
  DeviceBuffer<int> produced{1}, consumed{1};
  DeviceBuffer<unsigned> mismatches{1};
  Fixture(cudaStream_t s) {
    for (auto& b : slots) b.fill_zero(s);
    produced.fill_zero(s);
    consumed.fill_zero(s);
    mismatches.fill_zero(s);
    gt::sync(s);
  }
  void produce(cudaStream_t s, int slot) {
    bump<<<1, 1, 0, s>>>(produced.data());
    fill_slot<<<4, 256, 0, s>>>(slots[slot].data(), kN, produced.data());
  }
  void consume(cudaStream_t s, int slot) {
    bump<<<1, 1, 0, s>>>(consumed.data());
    check_slot<<<64, 256, 0, s>>>(slots[slot].data(), kN, consumed.data(), mismatches.data());
  }
  template <class T>
  T read(const DeviceBuffer<T>& b) {
    return b.to_host(nullptr).front();
  }
};

void run_frames(bool overlap, int frames) {
  Stream init;
  Fixture f(init);
  FramePipelineOptions o;
  o.overlap = overlap;
  FramePipeline pipe([&](cudaStream_t s, int slot) { f.produce(s, slot); },
                     [&](cudaStream_t s, int slot) { f.consume(s, slot); }, o);
  for (int k = 0; k < frames; ++k) pipe.submit();
  pipe.drain();
  EXPECT_EQ(f.read(f.produced), frames);
  EXPECT_EQ(f.read(f.consumed), frames);
  EXPECT_EQ(f.read(f.mismatches), 0u) << "the consumer read a slot the producer was writing";
  EXPECT_EQ(pipe.frames(), static_cast<std::uint64_t>(frames));
  EXPECT_EQ(pipe.latencies().size(), static_cast<std::size_t>(frames)) << "one latency per frame";
  EXPECT_EQ(pipe.dropped_latencies(), 0u);
  for (double l : pipe.latencies()) EXPECT_GT(l, 0.0);
  EXPECT_TRUE(pipe.producer_graphs().captured({1, 0}));
  EXPECT_TRUE(pipe.consumer_graphs().captured({1, 1}));
}

}  // namespace

TEST_F(GpuTest, OverlappedConsumerNeverReadsAHalfWrittenSlot) {
  run_frames(true, gt::scaled(300, 30));
}

TEST_F(GpuTest, SerialisedPipelineReadsEverySlotWhole) { run_frames(false, gt::scaled(100, 10)); }

// The check above has teeth: without the events, a consumer reading while the producer writes sees
// a torn slot (made certain by holding the producer half-way with a gate).
TEST_F(GpuTest, WithoutTheJoinTheConsumerSeesATornSlot) {
  SIMPROF_SKIP_GATED_UNDER_SANITIZER();
  Stream a, b;
  Fixture f(a);
  // Load every kernel before the gate holds a stream: lazy module loading waits for the device,
  // which a held stream never frees.
  bump<<<1, 1, 0, b>>>(f.consumed.data());
  fill_slot<<<1, 32, 0, b>>>(f.slots[1].data(), 0, f.consumed.data());
  check_slot<<<1, 32, 0, b>>>(f.slots[1].data(), 0, f.consumed.data(), f.mismatches.data());
  SIMPROF_CUDA_CHECK(cudaMemsetAsync(f.consumed.data(), 0, sizeof(int), b));
  gt::sync(b);
  gt::Gate gate;
  bump<<<1, 1, 0, a>>>(f.produced.data());
  fill_slot<<<4, 256, 0, a>>>(f.slots[0].data(), kN / 2, f.produced.data());  // first half
  Event first_half;
  first_half.record(a);
  gate.hold(a);
  fill_slot<<<4, 256, 0, a>>>(f.slots[0].data() + kN / 2, kN / 2, f.produced.data());
  // The consumer on b, joined only to the first half: runs while a is held half-way.
  SIMPROF_CUDA_CHECK(cudaStreamWaitEvent(b, first_half.get(), 0));
  bump<<<1, 1, 0, b>>>(f.consumed.data());
  check_slot<<<64, 256, 0, b>>>(f.slots[0].data(), kN, f.consumed.data(), f.mismatches.data());
  gt::sync(b);
  gate.open();
  gt::sync(a);
  EXPECT_EQ(f.read(f.mismatches), static_cast<unsigned>(kN / 2)) << "half the slot was stale";
}

TEST_F(GpuTest, ProducerStreamGetsTheHighestPriority) {
  auto noop = [](cudaStream_t, int) {};
  int lowest = 0, highest = 0;
  SIMPROF_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
  FramePipeline with(noop, noop);
  int p = 0, c = 0;
  SIMPROF_CUDA_CHECK(cudaStreamGetPriority(with.producer_stream(), &p));
  SIMPROF_CUDA_CHECK(cudaStreamGetPriority(with.consumer_stream(), &c));
  EXPECT_EQ(p, highest);
  EXPECT_EQ(c, lowest);
  FramePipelineOptions o;
  o.prioritize_producer = false;
  FramePipeline without(noop, noop, o);
  SIMPROF_CUDA_CHECK(cudaStreamGetPriority(without.producer_stream(), &p));
  SIMPROF_CUDA_CHECK(cudaStreamGetPriority(without.consumer_stream(), &c));
  EXPECT_EQ(p, c) << "same priority without the option";
  o.overlap = false;
  FramePipeline serial(noop, noop, o);
  EXPECT_EQ(serial.producer_stream(), serial.consumer_stream());
}

TEST(FramePipelineInput, RejectsBadOptions) {
  std::string why;
  if (!device_available(&why)) GTEST_SKIP() << "GPU test skipped: " << why;
  FramePipelineOptions o;
  o.in_flight = 1;
  auto noop = [](cudaStream_t, int) {};
  EXPECT_NE(simprof::testing::error_of<std::exception>([&] {
              FramePipeline p(noop, noop, o);
            }).find("in_flight = 1"),
            std::string::npos);
  EXPECT_NE(simprof::testing::error_of<std::exception>([&] {
              FramePipeline p(nullptr, noop);
            }).find("callable"),
            std::string::npos);
}
