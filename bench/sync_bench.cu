// SPDX-License-Identifier: MIT
// What a host synchronisation around a replayed step costs, in parts, measured on the host clock:
//   * cudaGraphLaunch host cost
//   * launch -> first kernel start (the kernel raises a flag in mapped host memory; the host sees
//   it)
//   * kernel end -> cudaStreamSynchronize returns (a helper thread sees the end flag while the main
//     thread sits in the synchronisation)
// each after the GPU sat idle for 0, 1 and 10 ms: the measured counterpart of the CUDA-graph
// guide's "T_sync >= max(handshake, context switch) + idle wake-up" model. Prints p50/p99 in
// microseconds. (A distribution tool, so a plain program: Google Benchmark's aggregates stop at
// mean/median.)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "simprof/base/stats.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/handle.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/timers/timer_view.hpp"

namespace {

using namespace simprof;
using clk = std::chrono::steady_clock;

__global__ void marked_step(volatile unsigned* flags, unsigned* counter,
                            unsigned long long spin_ns) {
  const unsigned seq = ++*counter;
  flags[0] = seq;  // started
  __threadfence_system();
  const unsigned long long t0 = global_timer_ns();
  while (global_timer_ns() - t0 < spin_ns) {
  }
  __threadfence_system();
  flags[1] = seq;  // finished
}

double us(clk::time_point a, clk::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  if (!cuda::device_available(&why)) {
    std::printf("sync_bench: no GPU: %s\n", why.c_str());
    return 0;
  }
  const int samples = argc > 1 ? std::atoi(argv[1]) : 300;
  cuda::Stream stream;
  const cuda::PinnedBuffer<unsigned> flags_host(2, cudaHostAllocMapped);  // zeroed
  unsigned* flags_dev = flags_host.device_pointer();
  cuda::DeviceBuffer<unsigned> counter(1);
  counter.fill_zero(stream);
  // One replayed step: a single 50 us kernel, captured once.
  cuda::GraphHandle g;
  cuda::GraphExecHandle exec;
  SIMPROF_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  marked_step<<<1, 1, 0, stream>>>(flags_dev, counter.data(), 50'000);
  SIMPROF_CUDA_CHECK(cudaStreamEndCapture(stream, g.out()));
  SIMPROF_CUDA_CHECK(cudaGraphInstantiate(exec.out(), g.get(), 0));
  for (int i = 0; i < 20; ++i) SIMPROF_CUDA_CHECK(cudaGraphLaunch(exec.get(), stream));  // warm
  stream.synchronize();
  unsigned expected = 20;
  volatile unsigned* flags = flags_host.data();

  std::printf(
      "sync_bench: one replayed 50 us step per sample, %d samples per row, host steady clock\n\n",
      samples);
  std::printf("%8s | %21s | %21s | %21s | %21s\n", "GPU idle", "cudaGraphLaunch host",
              "launch -> kernel start", "kernel end -> sync ret", "whole sync round trip");
  std::printf("%8s | %10s %10s | %10s %10s | %10s %10s | %10s %10s\n", "", "p50 us", "p99 us",
              "p50 us", "p99 us", "p50 us", "p99 us", "p50 us", "p99 us");
  for (const int idle_ms : {0, 1, 10}) {
    std::vector<double> launch, start, ret, total;
    for (int i = 0; i < samples; ++i) {
      if (idle_ms) std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
      ++expected;
      std::atomic<bool> seen{false};
      clk::time_point t_end{};
      std::thread watcher([&] {
        while (flags[1] != expected) {
        }
        t_end = clk::now();
        seen = true;
      });
      const auto t0 = clk::now();
      SIMPROF_CUDA_CHECK(cudaGraphLaunch(exec.get(), stream));
      const auto t1 = clk::now();
      while (flags[0] != expected) {
      }
      const auto t2 = clk::now();
      SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
      const auto t3 = clk::now();
      watcher.join();
      launch.push_back(us(t0, t1));
      start.push_back(us(t0, t2));
      ret.push_back(std::max(0.0, us(t_end, t3)));
      total.push_back(us(t0, t3));
    }
    const auto a = summarize(launch), b = summarize(start), c = summarize(ret),
               d = summarize(total);
    std::printf("%5d ms | %10.1f %10.1f | %10.1f %10.1f | %10.1f %10.1f | %10.1f %10.1f\n", idle_ms,
                a.p50, a.p99, b.p50, b.p99, c.p50, c.p99, d.p50, d.p99);
    std::fflush(stdout);
  }
  return 0;
}
