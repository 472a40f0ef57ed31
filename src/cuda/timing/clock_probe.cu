// SPDX-License-Identifier: MIT
#include <atomic>
#include <limits>

#include "clock_probe.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/device_clock.cuh"

namespace simprof::cuda::detail {

namespace {

// box[0] is the host's "go" (the probe's generation << 32 | round + 1), box[1] the device's answer
// (the same value once it has written box[2 + round], the global timer). A probe of another
// generation (one left behind by a probe that timed out) returns at once.
__global__ void clock_probe_kernel(volatile unsigned long long* box, unsigned long long gen,
                                   int rounds) {
  const unsigned long long t0 = global_timer_ns();
  for (int i = 0; i < rounds; ++i) {
    const unsigned long long want = gen << 32 | static_cast<unsigned long long>(i + 1);
    unsigned long long go = 0;
    while ((go = box[0]) != want)  // a host that gave up (or is gone): 50 ms at the most
      if (go >> 32 != gen || global_timer_ns() - t0 > 50'000'000ULL) return;
    box[2 + i] = global_timer_ns();
    __threadfence_system();
    box[1] = want;
  }
}

}  // namespace

ClockProbe::ClockProbe()
    : stream_(cudaStreamNonBlocking, greatest_priority()), box_(2 + kRounds, cudaHostAllocMapped) {}

ClockPoint ClockProbe::probe(const TimeBase& time_base) noexcept {
  ClockPoint best;
  volatile unsigned long long* box = box_.data();
  const unsigned long long gen = ++gen_ & 0xffffffffULL;
  box[1] = 0;
  box[0] = gen << 32;  // round 0 not yet: an older probe sees another generation and returns
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const auto quit = [&] { box[0] = ((gen + 1) & 0xffffffffULL) << 32; };  // a generation of its own
  unsigned long long* dbox = nullptr;
  (void)cudaGetLastError();  // an earlier call's error is not this launch's
  if (cudaHostGetDevicePointer(reinterpret_cast<void**>(&dbox), box_.data(), 0) != cudaSuccess) {
    (void)cudaGetLastError();
    return best;
  }
  clock_probe_kernel<<<1, 1, 0, stream_.get()>>>(dbox, gen, kRounds);
  if (cudaGetLastError() != cudaSuccess) {
    quit();
    return best;
  }
  std::int64_t best_rtt = std::numeric_limits<std::int64_t>::max();
  for (int i = 0; i < kRounds; ++i) {
    const unsigned long long want = gen << 32 | static_cast<unsigned long long>(i + 1);
    const std::int64_t limit = i == 0 ? 20'000'000 : 1'000'000;  // ns
    const std::int64_t t0 = time_base.now_ns();
    box[0] = want;
    std::int64_t t1 = t0;
    // A tight poll on purpose: the round trip it measures is the alignment's error bar (bounded).
    while (box[1] != want) {
      t1 = time_base.now_ns();
      if (t1 - t0 > limit) {
        quit();
        return best;
      }
    }
    t1 = time_base.now_ns();
    std::atomic_thread_fence(std::memory_order_acquire);  // the stamp below after the answer
    const std::int64_t g = static_cast<std::int64_t>(box[2 + i]);
    if (t1 - t0 < best_rtt) {
      best_rtt = t1 - t0;
      best.ok = true;
      best.device_ns = g;
      best.host_ns = t0 + (t1 - t0) / 2;
      best.error_ns = (t1 - t0 + 1) / 2;
    }
  }
  return best;
}

}  // namespace simprof::cuda::detail
