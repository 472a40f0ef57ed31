// SPDX-License-Identifier: MIT
// Shared pieces of the GPU tests: a fixture that skips with the reason where no GPU is visible, and
// small kernels.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/device_clock.cuh"

namespace simprof::cuda::gputest {

/// SIMPROF_TEST_SCALE=small (scripts/gpu-sanitize sets it): `small` instead of `full`, so that
/// every GPU test binary runs under compute-sanitizer in about a minute.
inline int scaled(int full, int small) {
  const char* v = std::getenv("SIMPROF_TEST_SCALE");
  return v && std::string(v) == "small" ? small : full;
}

/// Whether figures that depend on speed are asserted: at full scale only. Under compute-sanitizer
/// (SIMPROF_TEST_SCALE=small) every launch and API call runs many times slower and the binaries of
/// a tool share the GPU, so a test still runs every code path there but leaves its timing checks
/// (lengths against events, a host that must wait, a queue that must fill) to the full-scale run.
inline bool timing_asserted() { return scaled(1, 0) == 1; }

}  // namespace simprof::cuda::gputest

/// Skips, saying `why`, where timing checks stand aside (under compute-sanitizer,
/// SIMPROF_TEST_SCALE=small).
#define SIMPROF_SKIP_WHERE_TIMING_STANDS_ASIDE(why)                          \
  do {                                                                       \
    if (!::simprof::cuda::gputest::timing_asserted()) GTEST_SKIP() << (why); \
  } while (0)

/// For a test that holds a stream with a Gate while the host goes on: under compute-sanitizer
/// kernels of different streams run one at a time and initcheck waits for a copy's source to be
/// written, so the host would never reach the gate's open(): it skips.
#define SIMPROF_SKIP_GATED_UNDER_SANITIZER()                                                \
  SIMPROF_SKIP_WHERE_TIMING_STANDS_ASIDE(                                                   \
      "holds a stream with a gate kernel until the host opens it: under compute-sanitizer " \
      "(SIMPROF_TEST_SCALE=small) the host would wait for it")

/// For a test whose every check is a timing check: under compute-sanitizer it would assert
/// nothing, so it skips and says why instead of passing.
#define SIMPROF_SKIP_TIMING_ONLY_UNDER_SANITIZER()                                       \
  SIMPROF_SKIP_WHERE_TIMING_STANDS_ASIDE(                                                \
      "every check of this test is a timing check, and timing checks stand aside under " \
      "compute-sanitizer (SIMPROF_TEST_SCALE=small)")

/// Prefix for a timing assertion: `SIMPROF_TIMING EXPECT_NEAR(t, want, tol) << "...";`
#define SIMPROF_TIMING                                \
  if (!::simprof::cuda::gputest::timing_asserted()) { \
  } else  // NOLINT

namespace simprof::cuda::gputest {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!device_available(&why)) GTEST_SKIP() << "GPU test skipped: " << why;
  }
};

// x[i] = x[i] * 1.0001 + a: cheap, order-sensitive, so a missing or repeated launch shows.
__global__ inline void axpb_kernel(float* x, int n, float a) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 1.0001f + a;
}

inline void axpb(float* x, int n, float a, cudaStream_t s) {
  axpb_kernel<<<(n + 255) / 256, 256, 0, s>>>(x, n, a);
  SIMPROF_CUDA_CHECK_LAUNCH("axpb_kernel");
}

// Spins the calling thread for `ns` nanoseconds of the global timer.
__device__ inline void spin_for_ns(unsigned long long ns) {
  const unsigned long long t0 = global_timer_ns();
  while (global_timer_ns() - t0 < ns) {
  }
}

// Spins one thread for `ns` nanoseconds of the global timer.
__global__ inline void spin_kernel(unsigned long long ns) { spin_for_ns(ns); }

inline void spin(unsigned long long ns, cudaStream_t s) {
  spin_kernel<<<1, 1, 0, s>>>(ns);
  SIMPROF_CUDA_CHECK_LAUNCH("spin_kernel");
}

// Spins for the nanoseconds found in device memory when it runs: one graph, any length.
__global__ inline void spin_read_kernel(const unsigned long long* ns) { spin_for_ns(*ns); }

inline void spin_read(const unsigned long long* ns, cudaStream_t s) {
  spin_read_kernel<<<1, 1, 0, s>>>(ns);
  SIMPROF_CUDA_CHECK_LAUNCH("spin_read_kernel");
}

// Holds a stream until the host opens the gate: the GPU is busy for certain, whatever the host does
// meanwhile (a spin of fixed length can end before a delayed host gets to look).
class Gate {
 public:
  Gate() : flag_(1, cudaHostAllocMapped), dev_(flag_.device_pointer()) {}
  ~Gate() {
    open();
    cudaDeviceSynchronize();
  }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  void hold(cudaStream_t s);  // defined below: enqueues a kernel that waits for open()
  void open() { *static_cast<volatile int*>(flag_.data()) = 1; }

 private:
  PinnedBuffer<int> flag_;  // zeroed
  int* dev_ = nullptr;
};

__global__ inline void wait_for_gate(const volatile int* flag) {
  while (*flag == 0) {
  }
}

inline void Gate::hold(cudaStream_t s) {
  wait_for_gate<<<1, 1, 0, s>>>(dev_);
  SIMPROF_CUDA_CHECK_LAUNCH("wait_for_gate");
}

// For death tests: synchronises `s`; a CudaError is printed (to stderr, where EXPECT_EXIT looks)
// and the process exits with 3; without one it exits with 0.
[[noreturn]] inline void synchronize_or_exit(cudaStream_t s) {
  try {
    SIMPROF_CUDA_CHECK(cudaStreamSynchronize(s));
  } catch (const CudaError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(3);
  }
  std::exit(0);
}

inline void sync(cudaStream_t s) { SIMPROF_CUDA_CHECK(cudaStreamSynchronize(s)); }

inline void fill(DeviceBuffer<float>& b, float v, cudaStream_t s) {
  std::vector<float> h(b.size(), v);
  b.copy_from_host(h.data(), h.size(), s);
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(s));
}

}  // namespace simprof::cuda::gputest
