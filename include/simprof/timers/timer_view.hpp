// SPDX-License-Identifier: MIT
// Per-environment timers inside kernels (and CPU loops): a (rows, n_envs) buffer, one row per named
// timer, one column per environment. The same header compiles with nvcc and with a plain C++
// compiler: clock_counter() reads the SM's cycle counter on the device and the TSC on the host.
//
// example: file
/* clang-format off */
//   __global__ void solve(int n, simprof::TimerView timers) {
//     const int e = blockIdx.x * blockDim.x + threadIdx.x;
//     if (e >= n) return;
//     simprof::TimerChain<> t(timers, e);   // one reading now
//     line_search(e);     t.lap(kLineSearch);       // the end of one block starts the next
//     update_gradient(e); t.lap(kUpdateGradient);
//   }
/* clang-format on */
//
// Readings are raw ticks: SM cycles (clock_counter) or nanoseconds (global_timer_ns, with
// TimerChain<GlobalTimerNs>). Compare cycles with each other; convert them to time only
// approximately (SM clocks boost and throttle); global-timer readings are exact nanoseconds.
#pragma once

#include <cstdint>

#include "simprof/base/config.hpp"

#if !defined(__CUDA_ARCH__)
#include "simprof/base/clock.hpp"
#endif

#if !defined(SIMPROF_TIMER_CHECKS)
#if defined(NDEBUG)
#define SIMPROF_TIMER_CHECKS 0
#else
#define SIMPROF_TIMER_CHECKS 1
#endif
#endif

#include <cstdio>  // the bounds checks' message (timer_bounds_failed is defined either way)
#include <cstdlib>

namespace simprof {

namespace detail {
// A failed bounds check: on the device the kernel traps (the host's next synchronisation reports a
// CudaError); on the host the process aborts with the message. Independent of NDEBUG, so tests and
// release builds can turn it on with SIMPROF_TIMER_CHECKS=1.
SIMPROF_HOST_DEVICE inline void timer_bounds_failed(const char* what, int value, int limit) {
#if defined(__CUDA_ARCH__)
  printf("simprof: timer %s %d out of range (expected < %d)\n", what, value, limit);
  __trap();
#else
  std::fprintf(stderr, "simprof: timer %s %d out of range (expected < %d)\n", what, value, limit);
  std::abort();
#endif
}
}  // namespace detail

/// The cycle counter: the SM's clock64() on the device, the TSC on x86-64 hosts (steady-clock
/// nanoseconds elsewhere).
SIMPROF_HOST_DEVICE SIMPROF_FORCE_INLINE std::uint64_t clock_counter() {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(clock64());
#else
  return static_cast<std::uint64_t>(detail::tsc_now());
#endif
}

/// Nanoseconds of a clock shared by every SM (%globaltimer) on the device; steady-clock nanoseconds
/// on the host.
SIMPROF_HOST_DEVICE SIMPROF_FORCE_INLINE std::uint64_t global_timer_ns() {
#if defined(__CUDA_ARCH__)
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  return static_cast<std::uint64_t>(detail::steady_now_ns());
#endif
}

/// Which counter a chain reads: the SM's cycle counter on the device, the TSC on the host.
struct CycleCounter {
  /// The counter's value now (clock_counter()).
  SIMPROF_HOST_DEVICE SIMPROF_FORCE_INLINE static std::uint64_t now() { return clock_counter(); }
};
/// Which counter a chain reads: the device's global timer in nanoseconds, the steady clock on the
/// host.
struct GlobalTimerNs {
  /// The counter's value now (global_timer_ns()).
  SIMPROF_HOST_DEVICE SIMPROF_FORCE_INLINE static std::uint64_t now() { return global_timer_ns(); }
};

/// A trivially copyable view of a (rows, n_envs) buffer of ticks, row-major: element (row, env) is
/// data[row * n_envs + env], so the threads of a warp (consecutive envs) store to consecutive
/// addresses. Pass it to kernels by value.
struct TimerView {
  /// The buffer's first element (not owned).
  std::uint64_t* data = nullptr;
  /// Rows (timers).
  int rows = 0;
  /// Environments (columns).
  int n_envs = 0;

  /// The element (row, env); bounds-checked when SIMPROF_TIMER_CHECKS is on.
  SIMPROF_HOST_DEVICE SIMPROF_FORCE_INLINE std::uint64_t& at(int row, int env) const {
#if SIMPROF_TIMER_CHECKS
    if (row < 0 || row >= rows) detail::timer_bounds_failed("row", row, rows);
    if (env < 0 || env >= n_envs) detail::timer_bounds_failed("env", env, n_envs);
#endif
    return data[static_cast<long long>(row) * n_envs + env];
  }
  /// Stores a duration for (row, env).
  SIMPROF_HOST_DEVICE SIMPROF_FORCE_INLINE void record(int row, int env,
                                                       std::uint64_t ticks) const {
    at(row, env) = ticks;
  }
  /// Adds a duration to (row, env): for a block that runs several times (substeps, iterations).
  SIMPROF_HOST_DEVICE SIMPROF_FORCE_INLINE void add(int row, int env, std::uint64_t ticks) const {
    at(row, env) += ticks;
  }
};

/// Chained readings for one env: each lap() records the time since the previous reading into a row
/// and starts the next block, so n blocks cost n + 1 counter reads.
template <class Counter = CycleCounter>
struct TimerChain {
  /// Where laps are recorded.
  TimerView view;
  /// The env (column) laps are recorded for.
  int env;
  /// The reading when the chain began.
  std::uint64_t start;
  /// The latest reading: where the block in progress began.
  std::uint64_t last;

  /// Starts the chain for env `e` of `v`: reads the counter once.
  SIMPROF_HOST_DEVICE SIMPROF_FORCE_INLINE TimerChain(TimerView v, int e)
      : view(v), env(e), start(Counter::now()), last(start) {}
  /// Records the block that just ended into `row` (overwriting) and starts the next one.
  SIMPROF_HOST_DEVICE SIMPROF_FORCE_INLINE void lap(int row) {
    const std::uint64_t now = Counter::now();
    view.record(row, env, now - last);
    last = now;
  }
  /// Like lap(), but adds to the row (a block inside a loop).
  SIMPROF_HOST_DEVICE SIMPROF_FORCE_INLINE void lap_add(int row) {
    const std::uint64_t now = Counter::now();
    view.add(row, env, now - last);
    last = now;
  }
  /// Restarts without recording (skip a block that should not count).
  SIMPROF_HOST_DEVICE SIMPROF_FORCE_INLINE void restart() { last = Counter::now(); }
  /// Records the whole span, from the chain's construction to its latest lap, into `row`: no read.
  SIMPROF_HOST_DEVICE SIMPROF_FORCE_INLINE void total(int row) {
    view.record(row, env, last - start);
  }
};

}  // namespace simprof
