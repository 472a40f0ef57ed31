// SPDX-License-Identifier: MIT
// The kernel timer's tests' step: three stages of spin kernels of known length (and, with `crowd`,
// a GPU-filling branch beside them). Included by test_kernel_timer.cu and
// test_kernel_timer_trace.cu.
#pragma once

#include "gpu_test.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/kernel_timer.hpp"
#include "simprof/profiler/step_profiler.hpp"

namespace simprof::cuda::gputest {
namespace {

// Kernels of known duration, each with a name of its own.
__global__ void collide_spin(unsigned long long ns) { spin_for_ns(ns); }
__global__ void integrate_spin(unsigned long long ns) { spin_for_ns(ns); }
__global__ void camera_spin(unsigned long long ns) { spin_for_ns(ns); }
// Many blocks spinning: a branch that fills every SM beside the chain (with room left for it).
__global__ void crowd_spin(unsigned long long ns) { spin_for_ns(ns); }

constexpr unsigned long long kCollideA = 20'000, kCollideB = 5'000, kIntegrate = 12'000,
                             kCamera = 30'000;

// A step of three stages: physics/collide (two kernels), physics/integrate, sensors/Cam (a memset
// and a kernel); with `crowd`, a second captured stream runs a GPU-filling kernel beside collide.
struct Step {
  StepProfiler& prof;
  DeviceBuffer<float> scratch{1024};
  Stream side;
  Event fork{cudaEventDisableTiming}, join{cudaEventDisableTiming};
  bool crowd = false;
  explicit Step(StepProfiler& p) : prof(p) {}
  void run(cudaStream_t s) {
    {
      auto st = prof.stage("physics/collide");
      if (crowd) {
        fork.record(s);
        SIMPROF_CUDA_CHECK(cudaStreamWaitEvent(side.get(), fork.get(), 0));
        crowd_spin<<<2 * 132, 512, 0, side.get()>>>(60'000);
      }
      collide_spin<<<1, 32, 0, s>>>(kCollideA);
      collide_spin<<<1, 32, 0, s>>>(kCollideB);
    }
    {
      auto st = prof.stage("physics/integrate");
      integrate_spin<<<8, 64, 0, s>>>(kIntegrate);
    }
    if (crowd) {
      join.record(side.get());
      SIMPROF_CUDA_CHECK(cudaStreamWaitEvent(s, join.get(), 0));
    }
    {
      auto st = prof.stage("sensors/Cam");
      SIMPROF_CUDA_CHECK(cudaMemsetAsync(scratch.data(), 0, scratch.bytes(), s));
      camera_spin<<<1, 1, 0, s>>>(kCamera);
    }
    SIMPROF_CUDA_CHECK_LAUNCH("the test step's kernels");
  }
};

const KernelNodeTime* find(const std::vector<KernelNodeTime>& nodes, const std::string& name,
                           int nth = 0) {
  for (const auto& n : nodes)
    if (n.name.find(name) != std::string::npos && nth-- == 0) return &n;
  return nullptr;
}

}  // namespace
}  // namespace simprof::cuda::gputest
