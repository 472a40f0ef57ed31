// SPDX-License-Identifier: MIT
// Which launch pattern makes the host heap grow while CUPTI is subscribed (a KernelTracer alive,
// no window open)? The GPU soak grew 1.8 MiB over 10^6 steps: one 32-byte malloc inside CUPTI
// (cuLaunchKernel -> libcupti -> malloc), never freed, per DeviceStageTimer publish launch (a
// kernel on the timer's side stream after a wait for the step's end event). Each pattern runs
// 20,000 iterations beside a replayed graph on the main stream; live malloc blocks (glibc's, every
// thread: malloc_count.cpp) before and after are printed per iteration.
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/runtime/handle.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"
#include "simprof/cuda/trace/kernel_tracer.hpp"
#include "simprof/profiler/step_profiler.hpp"

extern "C" long long simprof_live_malloc_blocks() noexcept;

namespace {

using namespace simprof;
using namespace simprof::cuda;

__global__ void work(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 1.0001f + 1.0f;
}
__global__ void publish(const unsigned long long* src, unsigned long long* dst,
                        unsigned long long k) {
  for (unsigned i = threadIdx.x; i < 256; i += blockDim.x) dst[i] = src[i] + k;
}

ProfilingOptions quiet() {
  ProfilingOptions o;
  o.show_fps = false;
  return o;
}

double per_iteration(const std::function<void()>& body, cudaStream_t a, cudaStream_t b) {
  for (int i = 0; i < 1000; ++i) body();
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(a));
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(b));
  const long long b0 = simprof_live_malloc_blocks();
  constexpr int kIterations = 20'000;
  for (int i = 0; i < kIterations; ++i) {
    body();
    if (i % 100 == 99) SIMPROF_CUDA_CHECK(cudaStreamSynchronize(a));
  }
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(a));
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(b));
  return static_cast<double>(simprof_live_malloc_blocks() - b0) / kIterations;
}

}  // namespace

int main() {
  std::string why;
  if (!device_available(&why)) {
    std::printf("no GPU: nothing measured (%s)\n", why.c_str());
    return 0;
  }
  StepProfiler prof(quiet(), 0);
  auto tracer = std::make_unique<KernelTracer>(prof);
  std::printf("CUPTI subscribed: %s\n",
              tracer->enabled() ? "yes" : tracer->disabled_reason().c_str());
  Stream main_s, side;
  Event done(cudaEventDisableTiming);
  DeviceBuffer<float> x(1 << 16);
  DeviceBuffer<unsigned long long> src(256);
  PinnedBuffer<unsigned long long> dst(256, cudaHostAllocMapped);
  unsigned long long* dst_dev = dst.device_pointer();
  // The main stream's step: a replayed graph of 8 kernels.
  GraphHandle g;
  SIMPROF_CUDA_CHECK(cudaStreamBeginCapture(main_s, cudaStreamCaptureModeThreadLocal));
  for (int k = 0; k < 8; ++k) work<<<64, 256, 0, main_s>>>(x.data(), 1 << 16);
  SIMPROF_CUDA_CHECK(cudaStreamEndCapture(main_s, g.out()));
  GraphExecHandle step;
  SIMPROF_CUDA_CHECK(cudaGraphInstantiate(step.out(), g.get(), 0));
  // The publish kernel as a one-node graph, its step set before each launch.
  GraphHandle pg;
  SIMPROF_CUDA_CHECK(cudaGraphCreate(pg.out(), 0));
  unsigned long long k = 0;
  const unsigned long long* src_p = src.data();
  void* args[] = {&src_p, &dst_dev, &k};
  cudaKernelNodeParams kp{};
  kp.func = reinterpret_cast<void*>(&publish);
  kp.gridDim = dim3(1);
  kp.blockDim = dim3(128);
  kp.kernelParams = args;
  cudaGraphNode_t pnode = nullptr;
  SIMPROF_CUDA_CHECK(cudaGraphAddKernelNode(&pnode, pg.get(), nullptr, 0, &kp));
  GraphExecHandle pexec;
  SIMPROF_CUDA_CHECK(cudaGraphInstantiate(pexec.out(), pg.get(), 0));

  auto replay = [&] { SIMPROF_CUDA_CHECK(cudaGraphLaunch(step.get(), main_s)); };
  auto wait_side = [&] {
    done.record(main_s);
    SIMPROF_CUDA_CHECK(cudaStreamWaitEvent(side, done.get(), 0));
  };
  std::vector<std::pair<const char*, std::function<void()>>> patterns = {
      {"graph replay alone", [&] { replay(); }},
      {"+ kernel on the same stream",
       [&] {
         replay();
         publish<<<1, 128, 0, main_s>>>(src.data(), dst_dev, ++k);
       }},
      {"+ wait on a side stream, kernel there (the publish)",
       [&] {
         replay();
         wait_side();
         publish<<<1, 128, 0, side>>>(src.data(), dst_dev, ++k);
       }},
      {"+ wait on a side stream, one-node graph there",
       [&] {
         replay();
         wait_side();
         ++k;
         SIMPROF_CUDA_CHECK(cudaGraphExecKernelNodeSetParams(pexec.get(), pnode, &kp));
         SIMPROF_CUDA_CHECK(cudaGraphLaunch(pexec.get(), side));
       }},
      {"+ wait on a side stream, copy there",
       [&] {
         replay();
         wait_side();
         SIMPROF_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(),
                                            256 * sizeof(unsigned long long),
                                            cudaMemcpyDeviceToHost, side));
       }},
  };
  const auto run_all = [&](const char* cupti) {
    for (const auto& [name, body] : patterns)
      std::printf("%-8s %-55s %8.4f live malloc blocks per iteration\n", cupti, name,
                  per_iteration(body, main_s, side));
  };
  run_all("CUPTI");
  {  // The library's own path: a DeviceStageTimer stamping 1 step in 16 of a replayed step.
    DeviceStageTimer dev(prof, main_s);
    GraphCache cache(main_s, {}, dev.instrumentation());
    auto body = [&] {
      auto s = prof.step();
      cache.run({1}, [&](cudaStream_t st) {
        auto stage = prof.stage("physics");
        for (int j = 0; j < 8; ++j) work<<<64, 256, 0, st>>>(x.data(), 1 << 16);
      });
    };
    std::printf("%-8s %-55s %8.4f live malloc blocks per step\n", "CUPTI",
                "DeviceStageTimer (1 step in 16 stamped), replayed step",
                per_iteration(body, main_s, side));
    tracer.reset();  // CUPTI unsubscribed
    std::printf("%-8s %-55s %8.4f live malloc blocks per step\n", "no CUPTI",
                "DeviceStageTimer (1 step in 16 stamped), replayed step",
                per_iteration(body, main_s, side));
  }
  run_all("no CUPTI");
  return 0;
}
