// SPDX-License-Identifier: MIT
// Device memory per step on the GPU: DeviceAllocations counts CUDA's allocation calls (runtime and
// driver, stream-ordered pools included, never twice), a MemoryTracker names the stage of a steady
// step that allocates, a replayed step that does not reads exactly 0, GraphCache says what its
// executables hold in graph memory and what eviction gives back, and the counter shares CUPTI with
// the kernel tracer.
#include <gtest/gtest.h>

#include <cuda.h>

#include <stdexcept>
#include <string>

#include "gpu_test.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/memory/device_allocations.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "trace_test.hpp"

using namespace simprof;
using namespace simprof::cuda;
namespace gt = simprof::cuda::gputest;

namespace {

using MemoryTest = gt::GpuTest;

// The driver's cuMemAlloc/cuMemFree through the runtime's entry points (the tests do not link
// libcuda: CI lists them on a machine without a driver).
template <class F>
F driver(const char* name) {
  void* p = simprof::cuda::detail::driver_entry_point(name);
  if (p == nullptr) throw std::runtime_error(name);
  return reinterpret_cast<F>(p);
}

}  // namespace

TEST_F(MemoryTest, CountsEveryAllocationCallOnceRuntimeDriverAndPools) {
  Stream stream;
  DeviceAllocations dev;
  SIMPROF_REQUIRE_CUPTI(dev);
  void* a = nullptr;
  SIMPROF_CUDA_CHECK(cudaMalloc(&a, 1000));
  void* b = nullptr;
  SIMPROF_CUDA_CHECK(cudaMallocAsync(&b, 4096, stream));
  const auto mem_alloc = driver<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc");
  const auto mem_free = driver<CUresult (*)(CUdeviceptr)>("cuMemFree");
  CUdeviceptr c = 0;
  ASSERT_EQ(mem_alloc(&c, 512), CUDA_SUCCESS);
  AllocCounts n = dev.counts();
  EXPECT_EQ(n.allocs, 3u) << "the runtime's own driver calls are not counted again";
  EXPECT_EQ(n.alloc_bytes, 1000u + 4096u + 512u);
  EXPECT_EQ(dev.in_use_bytes(), 1000 + 4096 + 512);
  SIMPROF_CUDA_CHECK(cudaFreeAsync(b, stream));
  SIMPROF_CUDA_CHECK(cudaFree(a));
  ASSERT_EQ(mem_free(c), CUDA_SUCCESS);
  SIMPROF_CUDA_CHECK(cudaFree(nullptr));  // frees nothing: not counted
  stream.synchronize();
  n = dev.counts();
  EXPECT_EQ(n.frees, 3u);
  EXPECT_EQ(n.free_bytes, 1000u + 4096u + 512u);
  EXPECT_EQ(dev.in_use_bytes(), 0);
  EXPECT_EQ(dev.peak_bytes(), 1000 + 4096 + 512);
}

TEST_F(MemoryTest, ASteadyStepThatAllocatesIsNamedWithItsStageAndBytes) {
  simprof::testing::SimprofLog log;
  Stream stream;
  DeviceAllocations dev;
  SIMPROF_REQUIRE_CUPTI(dev);
  StepProfiler prof(gt::quiet(), 0);
  MemoryTracker mem(prof, &dev, nullptr);
  DeviceBuffer<float> x(256);
  x.fill_zero(stream);
  for (int i = 0; i < 30; ++i) {
    auto step = prof.step();
    {
      auto p = prof.stage("physics");
      gt::axpb(x.data(), 256, 1.0f, stream);
    }
    auto s = prof.stage("sensors");
    auto cam = prof.stage("sensors/Cam");
    if (i >= 20) {  // a camera that allocates its image every step
      void* img = nullptr;
      SIMPROF_CUDA_CHECK(cudaMallocAsync(&img, 1 << 20, stream));
      SIMPROF_CUDA_CHECK(cudaFreeAsync(img, stream));
    }
  }
  stream.synchronize();
  EXPECT_EQ(mem.steady_allocating_steps(), 10u);
  EXPECT_EQ(mem.first_steady_allocation().step, 20u);
  EXPECT_EQ(mem.first_steady_allocation().stage, "sensors/Cam");
  EXPECT_EQ(mem.first_steady_allocation().bytes, 1u << 20);
  EXPECT_EQ(log.count("allocated on the device after the warm-up"), 1) << log.str();
  EXPECT_NE(log.str().find("1048576 bytes, in stage 'sensors/Cam'"), std::string::npos)
      << log.str();
  EXPECT_DOUBLE_EQ(mem.allocs_per_step("physics", MemorySide::kDevice), 0.0);
  EXPECT_DOUBLE_EQ(mem.bytes_per_step("sensors", MemorySide::kDevice), (1 << 20) / 3.0);
}

TEST_F(MemoryTest, AReplayedStepThatAllocatesNothingReadsExactlyZeroOver1000Steps) {
  Stream stream;
  DeviceAllocations dev;
  SIMPROF_REQUIRE_CUPTI(dev);
  StepProfiler prof(gt::quiet(), 0);
  DeviceBuffer<float> x(4096);  // persistent, made while counting: in use, not per step
  x.fill_zero(stream);
  GraphCache cache(stream);
  for (int i = 0; i < 10; ++i) {  // warm-up and capture
    auto step = prof.step();
    cache.run({4096}, [&](cudaStream_t s) { gt::axpb(x.data(), 4096, 1.0f, s); });
  }
  MemoryTracker mem(prof, &dev, nullptr);
  for (int i = 0; i < 1000; ++i) {
    auto step = prof.step();
    auto p = prof.stage("physics");
    cache.run({4096}, [&](cudaStream_t s) { gt::axpb(x.data(), 4096, 1.0f, s); });
  }
  stream.synchronize();
  EXPECT_EQ(mem.steps("step"), 1000u);
  EXPECT_EQ(mem.total("step", MemorySide::kDevice), AllocCounts{});
  EXPECT_EQ(mem.steady_allocating_steps(), 0u);
  EXPECT_GE(mem.device_in_use_bytes(), 4096 * 4) << "the persistent buffer";
  EXPECT_EQ(cache.graph_memory(), 0) << "no memory nodes in this graph";
}

TEST_F(MemoryTest, GraphCacheSaysWhatItsExecutablesHoldAndWhatEvictionGivesBack) {
  Stream stream;
  DeviceBuffer<float> x(1024);
  x.fill_zero(stream);
  GraphCacheOptions o;
  o.warmup = 1;
  GraphCache cache(stream, o);
  // A step with a scratch buffer allocated and freed inside it: captured, a graph memory node.
  auto body = [&](cudaStream_t s) {
    float* scratch = nullptr;
    SIMPROF_CUDA_CHECK(cudaMallocAsync(&scratch, 8 << 20, s));
    SIMPROF_CUDA_CHECK(cudaMemsetAsync(scratch, 0, 1024 * sizeof(float), s));  // read below
    gt::axpb(scratch, 1024, 1.0f, s);
    SIMPROF_CUDA_CHECK(
        cudaMemcpyAsync(x.data(), scratch, 1024 * sizeof(float), cudaMemcpyDeviceToDevice, s));
    SIMPROF_CUDA_CHECK(cudaFreeAsync(scratch, s));
  };
  for (int i = 0; i < 5; ++i) cache.run({1}, body);
  stream.synchronize();
  EXPECT_TRUE(cache.captured({1}));
  EXPECT_GE(cache.graph_memory({1}), 8 << 20) << "the scratch buffer, held by the executable";
  EXPECT_EQ(cache.graph_memory(), cache.graph_memory({1}));
  cache.clear();
  EXPECT_GE(cache.counters().graph_memory_released, 8u << 20);
  EXPECT_EQ(cache.graph_memory(), 0);
}

TEST_F(MemoryTest, SharesCuptiWithTheKernelTracer) {
  Stream stream;
  StepProfiler prof(gt::quiet(), 0);
  gt::KernelTraceSession kt(prof, Schedule{0, 0, 1, 1, 0});
  SIMPROF_REQUIRE_CUPTI(kt.tracer);
  DeviceAllocations dev;
  EXPECT_TRUE(dev.enabled()) << dev.disabled_reason();
  MemoryTracker mem(prof, &dev, nullptr);
  auto joined = kt.session.add_source(&mem);
  DeviceBuffer<float> x(256);
  x.fill_zero(stream);
  {
    auto step = prof.step();
    auto p = prof.stage("physics");
    void* tmp = nullptr;
    SIMPROF_CUDA_CHECK(cudaMalloc(&tmp, 2048));
    gt::axpb(x.data(), 256, 1.0f, stream);
    SIMPROF_CUDA_CHECK(cudaFree(tmp));
  }
  stream.synchronize();
  ASSERT_EQ(kt.traces.size(), 1u);
  std::size_t kernels = 0, counters = 0;
  for (const Span& s : kt.traces[0].spans) {
    kernels += s.kind == SpanKind::kKernel;
    counters += s.kind == SpanKind::kCounter && s.name == "device allocations per step";
  }
  EXPECT_EQ(kernels, 1u) << "the tracer still traces";
  EXPECT_EQ(counters, 1u);
  EXPECT_EQ(mem.last_step(MemorySide::kDevice).allocs, 1u);
  EXPECT_EQ(mem.last_step(MemorySide::kDevice).alloc_bytes, 2048u);
}

TEST_F(MemoryTest, SharedDeviceAllocationsIsOneObjectWhileHeld) {
  auto a = DeviceAllocations::shared();
  auto b = DeviceAllocations::shared();
  SIMPROF_REQUIRE_CUPTI(*a);
  EXPECT_EQ(a.get(), b.get()) << "every tracker that asks shares the one alive";
  // CUPTI counts for one at a time: a second one beside the shared one is refused by name.
  EXPECT_THROW({ DeviceAllocations second; }, std::logic_error);
  a.reset();
  EXPECT_EQ(b.use_count(), 1);
}
