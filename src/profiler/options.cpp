// SPDX-License-Identifier: MIT
#include "simprof/profiler/options.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace simprof {

namespace {

[[noreturn]] void reject(std::string_view field, std::string_view value,
                         std::string_view expected) {
  throw std::invalid_argument(
      fmt::format("simprof: ProfilingOptions.{} = {} (expected {})", field, value, expected));
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

[[noreturn]] void reject_env(const char* var, const std::string& raw, std::string_view expected) {
  throw std::invalid_argument(
      fmt::format("simprof: environment variable {}='{}' (expected {})", var, raw, expected));
}

double parse_double(const char* var, const std::string& raw) {
  const char* b = raw.c_str();
  char* e = nullptr;
  errno = 0;
  const double v = std::strtod(b, &e);
  if (e == b || *e != '\0' || errno == ERANGE) reject_env(var, raw, "a number");
  return v;
}

std::size_t parse_size(const char* var, const std::string& raw) {
  const char* b = raw.c_str();
  char* e = nullptr;
  errno = 0;
  if (raw.empty() || raw[0] == '-' || raw[0] == '+') reject_env(var, raw, "an unsigned integer");
  const unsigned long long v = std::strtoull(b, &e, 10);
  if (e == b || *e != '\0' || errno == ERANGE) reject_env(var, raw, "an unsigned integer");
  return static_cast<std::size_t>(v);
}

bool parse_bool(const char* var, const std::string& raw) {
  const std::string v = lower(raw);
  if (v == "1" || v == "true" || v == "on" || v == "yes") return true;
  if (v == "0" || v == "false" || v == "off" || v == "no") return false;
  reject_env(var, raw, "one of 1/0, true/false, on/off, yes/no");
}

ClockSource parse_clock(const char* var, const std::string& raw) {
  const std::string v = lower(raw);
  if (v == "auto") return ClockSource::kAuto;
  if (v == "steady") return ClockSource::kSteady;
  if (v == "tsc") return ClockSource::kTsc;
  reject_env(var, raw, "one of auto, steady, tsc");
}

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

}  // namespace

void ProfilingOptions::validate() const {
  if (!std::isfinite(fps_tracker_alpha) || fps_tracker_alpha < 0.0 || fps_tracker_alpha > 1.0)
    reject("fps_tracker_alpha", fmt::format("{}", fps_tracker_alpha), "a finite value in [0, 1]");
  if (fps_sample_interval.count() <= 0)
    reject("fps_sample_interval", fmt::format("{} ns", fps_sample_interval.count()),
           "a duration > 0, e.g. 50 ms");
  if (timings_window == 0) reject("timings_window", "0", "an integer >= 1");
  constexpr std::size_t kMaxWindow = std::size_t{1} << 24;
  if (timings_window > kMaxWindow)
    reject("timings_window", fmt::format("{}", timings_window),
           fmt::format("at most {} steps", kMaxWindow));
  if (stats_window > kMaxWindow)
    reject("stats_window", fmt::format("{}", stats_window),
           fmt::format("at most {} samples (0 turns the history off)", kMaxWindow));
  if (clock != ClockSource::kAuto && clock != ClockSource::kSteady && clock != ClockSource::kTsc)
    reject("clock", fmt::format("{}", static_cast<int>(clock)), "auto, steady or tsc");
}

ProfilingOptions ProfilingOptions::from_env(ProfilingOptions o) {
  if (const char* v = env("SIMPROF_SHOW_FPS")) o.show_fps = parse_bool("SIMPROF_SHOW_FPS", v);
  if (const char* v = env("SIMPROF_FPS_ALPHA")) {
    o.fps_tracker_alpha = parse_double("SIMPROF_FPS_ALPHA", v);
    if (!std::isfinite(o.fps_tracker_alpha) || o.fps_tracker_alpha < 0 || o.fps_tracker_alpha > 1)
      reject_env("SIMPROF_FPS_ALPHA", v, "a finite value in [0, 1]");
  }
  if (const char* v = env("SIMPROF_FPS_INTERVAL_MS")) {
    const double ms = parse_double("SIMPROF_FPS_INTERVAL_MS", v);
    if (!std::isfinite(ms) || ms <= 0 || ms > 1e9)
      reject_env("SIMPROF_FPS_INTERVAL_MS", v, "milliseconds > 0");
    o.fps_sample_interval = std::chrono::nanoseconds(std::llround(ms * 1e6));
    if (o.fps_sample_interval.count() <= 0)
      reject_env("SIMPROF_FPS_INTERVAL_MS", v, "at least 1e-6 ms");
  }
  if (const char* v = env("SIMPROF_TIMINGS_WINDOW")) {
    o.timings_window = parse_size("SIMPROF_TIMINGS_WINDOW", v);
    if (o.timings_window == 0) reject_env("SIMPROF_TIMINGS_WINDOW", v, "an integer >= 1");
  }
  if (const char* v = env("SIMPROF_STATS_WINDOW"))
    o.stats_window = parse_size("SIMPROF_STATS_WINDOW", v);
  if (const char* v = env("SIMPROF_CLOCK")) o.clock = parse_clock("SIMPROF_CLOCK", v);
  o.validate();
  return o;
}

std::string ProfilingOptions::to_string() const {
  return fmt::format(
      "show_fps={} fps_tracker_alpha={} fps_sample_interval={}ms timings_window={} stats_window={} "
      "clock={}",
      show_fps, fps_tracker_alpha, static_cast<double>(fps_sample_interval.count()) * 1e-6,
      timings_window, stats_window, simprof::to_string(clock));
}

}  // namespace simprof
