// SPDX-License-Identifier: MIT
#include "simprof/base/log.hpp"

#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace simprof {

std::shared_ptr<spdlog::logger> default_logger() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto existing = spdlog::get("simprof")) return existing;
  return spdlog::stdout_color_mt("simprof");
}

}  // namespace simprof
