// SPDX-License-Identifier: MIT
// What the stamps cost, measured on the stream of the first timer that needs it (stamp_cost.hpp):
// an eager stamp, with kernels of known length queued back to back with and without stamps between
// them; a stamp node, as the gap between stamps chained in a graph.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "simprof/base/log.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/runtime/handle.hpp"
#include "simprof/cuda/timing/device_clock.cuh"
#include "stamp_cost.hpp"

namespace simprof::cuda::detail {

namespace {

// Opens a hold_kernel's gate in mapped memory (the GPU polls it).
void let_run(unsigned& gate) { reinterpret_cast<volatile unsigned&>(gate) = 1; }

// measure_eager()'s stand-in for an engine's kernel: launched as one is, it runs 2 us (long enough
// for a dependent launched after it to be on the GPU when it ends).
__global__ void stand_in_kernel() {
  const unsigned long long t0 = global_timer_ns();
  while (global_timer_ns() - t0 < 2'000) {
  }
}

// Holds the stream for at least `ns`, and until the host sets `go`, but 100 ms at most (a host that
// cannot queue what comes after it is let go, and says so in `gave_up`); once one hold has given
// up, the others do not wait (launches that block until the kernel is done: no host gets there).
__global__ void hold_kernel(unsigned long long ns, const volatile unsigned* go,
                            volatile unsigned* gave_up) {
  const unsigned long long t0 = global_timer_ns();
  for (unsigned long long t = t0;
       t - t0 < ns || (*go == 0 && *gave_up == 0 && t - t0 < 100'000'000ull);
       t = global_timer_ns()) {
  }
  if (*go == 0) *gave_up = 1;
}

constexpr int kCalibrationStamps = 33;  // a stamp node's chain

}  // namespace

double measure_eager(cudaStream_t stream, const EagerStamp& launch_stamp) {
  // A stage read as on a sampled eager step, twice over: 8 kernels back to back between a begin
  // and an end stamp, then the same 8 kernels each in a child stage of its own (16 stamps more,
  // two between each two kernels, as between an engine's stages). A sixteenth of the difference
  // is what one eager stamp adds to a stage it sits in; the mean of the middle half of 24 such
  // pairs is taken (neighbours in time: the GPU's clock is the same for both). Each pair is held
  // on the GPU until the host has queued all of it, so that the GPU runs it back to back, not at
  // the host's pace; the first hold lasts 2 ms at least (it brings the SM clock up).
  constexpr int kPairs = 24, kUnits = 8;
  constexpr int kPerPair = 4 + 2 * kUnits;  // stamps: the two stages' bounds, the children's
  DeviceBuffer<unsigned long long> t(kPairs * kPerPair);
  // [p]: pair p may run; [kPairs]: a hold gave up waiting for its pair (100 ms). Zeroed.
  PinnedBuffer<unsigned> gate(kPairs + 1, cudaHostAllocMapped);
  // On every way out (a failed launch throws): no hold left waiting, nothing left running on the
  // buffers about to be freed.
  struct Release {
    const PinnedBuffer<unsigned>& gate;
    cudaStream_t stream;
    ~Release() {
      for (int p = 0; p < kPairs; ++p) let_run(gate[p]);
      cudaStreamSynchronize(stream);
    }
  } release{gate, stream};
  unsigned long long* next = t.data();
  const auto stamp = [&] {
    if (const cudaError_t e = launch_stamp(next++); e != cudaSuccess)
      throw CudaError(e, "cudaLaunchKernelEx (an eager stamp, calibrating)", __FILE__, __LINE__);
  };
  const auto kernel = [&] {
    stand_in_kernel<<<1, 1, 0, stream>>>();
    SIMPROF_CUDA_CHECK_LAUNCH("stand_in_kernel");
  };
  for (int p = 0; p < kPairs; ++p) {
    hold_kernel<<<1, 1, 0, stream>>>(p == 0 ? 2'000'000ull : 0ull, gate.device_pointer() + p,
                                     gate.device_pointer() + kPairs);
    SIMPROF_CUDA_CHECK_LAUNCH("hold_kernel");
    stamp();
    for (int k = 0; k < kUnits; ++k) kernel();
    stamp();
    stamp();
    for (int k = 0; k < kUnits; ++k) {
      stamp();
      kernel();
      stamp();
    }
    stamp();
    let_run(gate[p]);
  }
  unsigned long long h[kPairs * kPerPair] = {};
  t.copy_to_host(h, kPairs * kPerPair, stream);
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (gate[kPairs] != 0)
    simprof::default_logger()->warn(
        "simprof: DeviceStageTimer: measuring the eager stamps' cost, the GPU waited 100 ms for "
        "the host to queue its work and then ran at the host's pace (launches that block?): the "
        "cost taken out of eager stage times may be too high");
  double costs[kPairs];
  for (int p = 0; p < kPairs; ++p) {
    const unsigned long long* at = h + p * kPerPair;
    const auto plain = static_cast<double>(at[1] - at[0]);
    const auto staged = static_cast<double>(at[kPerPair - 1] - at[2]);
    costs[p] = (staged - plain) / (2.0 * kUnits);
  }
  std::sort(costs, costs + kPairs);
  double middle = 0;
  for (int p = kPairs / 4; p < kPairs - kPairs / 4; ++p) middle += costs[p];
  return std::max(0.0, middle / (kPairs - 2 * (kPairs / 4)));
}

// What one stamp adds to a chain: a graph of kCalibrationStamps stamps, each after the previous
// one, launched 3 times (the first loads and warms): the median gap between two consecutive stamps
// of the last launch.
double measure_hop(cudaStream_t stream, const void* node_stamp) {
  DeviceBuffer<unsigned long long> t(kCalibrationStamps);
  GraphHandle g;
  SIMPROF_CUDA_CHECK(cudaGraphCreate(g.out(), 0));
  cudaKernelNodeParams kp{};
  kp.gridDim = dim3(1);
  kp.blockDim = dim3(1);
  kp.func = const_cast<void*>(node_stamp);
  cudaGraphNode_t prev = nullptr;
  for (int i = 0; i < kCalibrationStamps; ++i) {
    unsigned long long* at = t.data() + i;
    void* args[] = {&at};
    kp.kernelParams = args;
    cudaGraphNode_t n = nullptr;
    SIMPROF_CUDA_CHECK(
        cudaGraphAddKernelNode(&n, g.get(), prev ? &prev : nullptr, prev ? 1 : 0, &kp));
    prev = n;
  }
  GraphExecHandle exec;
  SIMPROF_CUDA_CHECK(cudaGraphInstantiate(exec.out(), g.get(), 0));
  for (int i = 0; i < 3; ++i) SIMPROF_CUDA_CHECK(cudaGraphLaunch(exec.get(), stream));
  unsigned long long h[kCalibrationStamps] = {};
  t.copy_to_host(h, kCalibrationStamps, stream);
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
  double gaps[kCalibrationStamps - 1];
  for (int i = 0; i + 1 < kCalibrationStamps; ++i) gaps[i] = static_cast<double>(h[i + 1] - h[i]);
  constexpr int mid = (kCalibrationStamps - 1) / 2;
  std::nth_element(gaps, gaps + mid, gaps + (kCalibrationStamps - 1));
  return gaps[mid];
}

}  // namespace simprof::cuda::detail
