// SPDX-License-Identifier: MIT
// A problem said the first time it happens, and only counted after (by its owner): formatted and
// logged inside, never throws, and safe when two threads say it at once. Private to
// src/cuda/timing.
#pragma once

#include <atomic>
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

}  // namespace simprof::cuda::detail
