// SPDX-License-Identifier: MIT
#include "simprof/base/clock.hpp"

#include <cmath>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include <fmt/format.h>

#if SIMPROF_HAS_TSC && !defined(_MSC_VER)
#include <cpuid.h>
#endif

namespace simprof {

std::string_view to_string(ClockSource source) noexcept {
  switch (source) {
    case ClockSource::kAuto:
      return "auto";
    case ClockSource::kSteady:
      return "steady";
    case ClockSource::kTsc:
      return "tsc";
  }
  return "?";
}

namespace {

bool detect_invariant_tsc() noexcept {
#if SIMPROF_HAS_TSC && !defined(_MSC_VER)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u) {
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    if (d & (1u << 8)) return true;  // CPUID.80000007H:EDX[8] invariant TSC
  }
  // Hypervisors often hide the CPUID bit but Linux still reports what it verified.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0) {
      return line.find(" constant_tsc") != std::string::npos &&
             line.find(" nonstop_tsc") != std::string::npos;
    }
  }
  return false;
#else
  return false;
#endif
}

double calibrate_tsc() {
  // Best of three 4 ms windows against the steady clock: the relative error is the steady clock's
  // jitter over 4 ms.
  double best = 0.0;
  double best_window = 1e30;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = detail::steady_now_ns();
    const auto c0 = detail::tsc_now();
    while (detail::steady_now_ns() - t0 < 4'000'000) {
    }
    const auto c1 = detail::tsc_now();
    const auto t1 = detail::steady_now_ns();
    const double ns = static_cast<double>(t1 - t0);
    const double hz = static_cast<double>(c1 - c0) / (ns * 1e-9);
    if (ns < best_window) {
      best_window = ns;
      best = hz;
    }
  }
  return best;
}

}  // namespace

bool tsc_available() noexcept {
  static const bool available = detect_invariant_tsc();
  return available;
}

double tsc_frequency_hz() {
  if (!tsc_available())
    throw std::runtime_error(
        "simprof: the TSC clock is not usable on this CPU (no invariant TSC); use "
        "ClockSource::kSteady or kAuto");
  static const double hz = calibrate_tsc();
  return hz;
}

Clock Clock::tsc() { return Clock(Kind::kTsc, nullptr, nullptr, tsc_frequency_hz()); }

Clock Clock::from_source(ClockSource source) {
  switch (source) {
    case ClockSource::kSteady:
      return steady();
    case ClockSource::kTsc:
      return tsc();
    case ClockSource::kAuto:
      return tsc_available() ? tsc() : steady();
  }
  throw std::invalid_argument(
      fmt::format("simprof: unknown ClockSource {}", static_cast<int>(source)));
}

Clock Clock::custom(NowFn now, const void* context, double ticks_per_second) {
  if (now == nullptr) throw std::invalid_argument("simprof: Clock::custom: `now` is null");
  if (!(std::isfinite(ticks_per_second) && ticks_per_second > 0))
    throw std::invalid_argument(
        fmt::format("simprof: Clock::custom: ticks_per_second = {} (expected a finite value > 0)",
                    ticks_per_second));
  return Clock(Kind::kCustom, now, context, ticks_per_second);
}

std::int64_t Clock::ticks(double s) const noexcept { return std::llround(s * ticks_per_second_); }

ClockSource Clock::source() const noexcept {
  return kind_ == Kind::kTsc ? ClockSource::kTsc : ClockSource::kSteady;
}

}  // namespace simprof
