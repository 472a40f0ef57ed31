// SPDX-License-Identifier: MIT
// A problem said the first time it happens, and only counted after (by its owner): formatted and
// logged inside, never throws, and safe when two threads say it at once; and a timer's voice, whose
// every line names the timer. Private to src/cuda/timing.
#pragma once

#include <atomic>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "simprof/base/log.hpp"

namespace simprof::cuda::detail {

class SaidOnce {
 public:
  template <class... Args>
  void warn(fmt::format_string<Args...> f, Args&&... args) noexcept {
    say(spdlog::level::warn, f, std::forward<Args>(args)...);
  }
  template <class... Args>
  void error(fmt::format_string<Args...> f, Args&&... args) noexcept {
    say(spdlog::level::err, f, std::forward<Args>(args)...);
  }
  bool said() const noexcept { return said_.load(std::memory_order_relaxed); }

 private:
  template <class... Args>
  void say(spdlog::level::level_enum level, fmt::format_string<Args...> f,
           Args&&... args) noexcept {
    if (said_.exchange(true, std::memory_order_relaxed)) return;
    try {
      default_logger()->log(level, f, std::forward<Args>(args)...);
    } catch (...) {
    }
  }

  std::atomic<bool> said_{false};
};

// A stamping timer's messages: its failed calls (an error, the first only: what follows a failure
// is often its echo) and its other problems (a warning, once for each SaidOnce).
class TimerVoice {
 public:
  explicit TimerVoice(const char* timer) noexcept : timer_(timer) {}
  void failed(const char* what, const std::string& why) noexcept {
    failure_.error("simprof: {}: {} failed: {}", timer_, what, why);
  }
  bool failed_before() const noexcept { return failure_.said(); }
  template <class... Args>
  void warn(SaidOnce& once, fmt::format_string<Args...> f, Args&&... args) noexcept {
    say(once, "", f, std::forward<Args>(args)...);
  }
  // The same, for a problem counted after (the line says so).
  template <class... Args>
  void warn_counted(SaidOnce& once, fmt::format_string<Args...> f, Args&&... args) noexcept {
    say(once, " (said once; counted after)", f, std::forward<Args>(args)...);
  }

 private:
  template <class... Args>
  void say(SaidOnce& once, const char* tail, fmt::format_string<Args...> f,
           Args&&... args) noexcept {
    if (once.said()) return;
    try {
      once.warn("simprof: {}: {}{}", timer_, fmt::format(f, std::forward<Args>(args)...), tail);
    } catch (...) {
    }
  }

  const char* timer_;
  SaidOnce failure_;
};

}  // namespace simprof::cuda::detail
