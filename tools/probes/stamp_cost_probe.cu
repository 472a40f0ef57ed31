// SPDX-License-Identifier: MIT
// What one command between two eager kernels costs the GPU (docs/gpu-truth.md, "Eager stamps as
// programmatic dependents"). A step is 16 kernels spinning a known time (the 1,024-env shape: 8
// blocks of 6 us; --n-envs 30000: 528 blocks of 11 us), launched eagerly on one stream; on 1 step
// in 8 a command goes before and after each kernel (32 a step). Loops of
// 400 steps, one per variant, interleaved in 15 iterations and timed with CUDA events; the median
// per variant, and what one command costs: (variant - plain) * 8 / commands a step. Run it on the
// GPU: stamp_cost_probe [--n-envs N]
#include <cuda.h>  // the driver API's types: cuStreamWriteValue32 through the runtime

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "simprof/cuda/runtime/error.hpp"
#include "simprof/timers/timer_view.hpp"

namespace {

using simprof::global_timer_ns;

// Waits for the work ahead when launched as a programmatic dependent (9.0 and up).
__device__ __forceinline__ void wait_if(bool dependent) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (dependent) asm volatile("griddepcontrol.wait;" ::: "memory");
#else
  (void)dependent;
#endif
}

__global__ void spin(unsigned long long ns) {
  const std::uint64_t t0 = global_timer_ns();
  while (global_timer_ns() - t0 < ns) {
  }
}

// The eager stamp as it was before programmatic launches: reads the step, reserves an entry.
struct Entry {
  int stage, kind;
  unsigned long long t;
};
struct Record {
  unsigned count;
  Entry entries[128];
};
__global__ void stamp_reserving(Record* recs, const unsigned* step, int stage, bool dependent) {
  wait_if(dependent);
  const unsigned long long t = global_timer_ns();
  Record& r = recs[*step % 64];
  const unsigned e = atomicAdd(&r.count, 1u);  // the record is never reset here: wrap around
  r.entries[e % 128] = Entry{stage, 1, t};
}

// The eager stamp as shipped: one store where the host said.
__global__ void stamp_one_store(unsigned long long* at, bool dependent) {
  wait_if(dependent);
  *at = global_timer_ns();
}

using WriteValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

enum Variant {
  kPlain,
  kReserving,
  kOneStore,
  kEvent,
  kWriteValue,
  kReservingDep,
  kOneStoreDep,
  kN
};
const char* const kName[] = {"plain",
                             "stamp kernel as it was (reads the step, reserves atomically)",
                             "one-store stamp kernel",
                             "timed cudaEventRecord",
                             "cuStreamWriteValue32",
                             "stamp kernel as it was, programmatic dependent",
                             "one-store stamp kernel, programmatic dependent (shipped)"};

}  // namespace

int main(int argc, char** argv) {
  int n_envs = 1024;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--n-envs") == 0) n_envs = std::atoi(argv[i + 1]);
  const bool big = n_envs >= 30000;
  const int blocks = big ? 4 * 132 : 8, threads = big ? 256 : 64;
  const unsigned long long ns = big ? 11'000 : 6'000;
  constexpr int kEvery = 8, kSteps = 400, kIters = 15;

  cudaStream_t s;
  SIMPROF_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Record* recs;
  unsigned* step;
  unsigned long long* out;
  SIMPROF_CUDA_CHECK(cudaMalloc(&recs, sizeof(Record) * 64));
  SIMPROF_CUDA_CHECK(cudaMemset(recs, 0, sizeof(Record) * 64));
  SIMPROF_CUDA_CHECK(cudaMalloc(&step, sizeof(unsigned)));
  SIMPROF_CUDA_CHECK(cudaMemset(step, 0, sizeof(unsigned)));
  SIMPROF_CUDA_CHECK(cudaMalloc(&out, sizeof(unsigned long long) * 32));
  std::vector<cudaEvent_t> events(32);
  for (cudaEvent_t& e : events) SIMPROF_CUDA_CHECK(cudaEventCreate(&e));
  cudaEvent_t e0, e1;
  SIMPROF_CUDA_CHECK(cudaEventCreate(&e0));
  SIMPROF_CUDA_CHECK(cudaEventCreate(&e1));
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  SIMPROF_CUDA_CHECK(
      cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &fn, 12000, cudaEnableDefault, &q));
  const auto write_value = reinterpret_cast<WriteValue32>(fn);
  SIMPROF_CUDA_CHECK(cudaDeviceSynchronize());
  int major = 0, device = 0;
  SIMPROF_CUDA_CHECK(cudaGetDevice(&device));
  SIMPROF_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  cudaFuncAttributes code{};
  SIMPROF_CUDA_CHECK(cudaFuncGetAttributes(&code, stamp_one_store));
  if (major < 9 || code.ptxVersion < 90) {
    std::fprintf(stderr,
                 "stamp_cost_probe: programmatic launches need compute capability 9.0 and code "
                 "compiled for it (GPU %d.x, code %d)\n",
                 major, code.ptxVersion);
    return 2;
  }

  cudaLaunchAttribute dependent{};
  dependent.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  dependent.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t one{};
  one.gridDim = dim3(1);
  one.blockDim = dim3(1);
  one.stream = s;
  const auto command = [&](int v, int i) {
    one.attrs = &dependent;
    one.numAttrs = v == kReservingDep || v == kOneStoreDep ? 1 : 0;
    switch (v) {
      case kReserving:
      case kReservingDep:
        SIMPROF_CUDA_CHECK(cudaLaunchKernelEx(&one, stamp_reserving, recs,
                                              static_cast<const unsigned*>(step), i,
                                              v == kReservingDep));
        break;
      case kOneStore:
      case kOneStoreDep:
        SIMPROF_CUDA_CHECK(cudaLaunchKernelEx(&one, stamp_one_store, out + i, v == kOneStoreDep));
        break;
      case kEvent:
        SIMPROF_CUDA_CHECK(cudaEventRecord(events[i], s));
        break;
      case kWriteValue:
        if (write_value(reinterpret_cast<CUstream>(s), reinterpret_cast<CUdeviceptr>(step), 0, 0) !=
            CUDA_SUCCESS) {
          std::fprintf(stderr, "stamp_cost_probe: cuStreamWriteValue32 failed\n");
          std::exit(1);
        }
        break;
      default:
        break;
    }
  };
  std::vector<double> us[kN];
  for (int it = 0; it <= kIters; ++it)  // the first iteration warms up
    for (int v = 0; v < kN; ++v) {
      SIMPROF_CUDA_CHECK(cudaEventRecord(e0, s));
      for (int st = 0; st < kSteps; ++st) {
        const bool sampled = v != kPlain && st % kEvery == 0;
        for (int k = 0; k < 16; ++k) {
          if (sampled) command(v, 2 * k);
          spin<<<blocks, threads, 0, s>>>(ns);
          if (sampled) command(v, 2 * k + 1);
        }
      }
      SIMPROF_CUDA_CHECK(cudaEventRecord(e1, s));
      SIMPROF_CUDA_CHECK(cudaEventSynchronize(e1));
      float ms = 0;
      SIMPROF_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
      if (it > 0) us[v].push_back(ms * 1e3 / kSteps);
    }
  std::printf(
      "stamp_cost_probe: %d envs' shape (%d blocks of %llu ns spins), 32 commands on 1 step in "
      "%d\n",
      n_envs, blocks, ns, kEvery);
  double plain = 0;
  for (int v = 0; v < kN; ++v) {
    std::vector<double>& r = us[v];
    std::nth_element(r.begin(), r.begin() + r.size() / 2, r.end());
    const double m = r[r.size() / 2];
    if (v == kPlain) plain = m;
    std::printf("%-62s %8.2f us a step  %+6.2f %%  %.3f us a command\n", kName[v], m,
                (m / plain - 1) * 100, v == kPlain ? 0.0 : (m - plain) * kEvery / 32);
  }
  for (cudaEvent_t e : events) cudaEventDestroy(e);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFree(out);
  cudaFree(step);
  cudaFree(recs);
  cudaStreamDestroy(s);
  return 0;
}
