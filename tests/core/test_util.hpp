// SPDX-License-Identifier: MIT
// Small helpers shared by the core tests.
#pragma once

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "simprof/profiler/options.hpp"

namespace simprof::testing {

/// Options that print no FPS line (the tests read the rate instead).
inline ProfilingOptions quiet() {
  ProfilingOptions o;
  o.show_fps = false;
  return o;
}

/// The message of the exception of type E that `f` throws, or "" when it throws none.
template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

/// A logger named `name` whose lines (formatted by `pattern`) go to `out`, for tests that read what
/// simprof logs.
inline std::shared_ptr<spdlog::logger> capture_logger(std::ostringstream& out,
                                                      const std::string& name = "capture",
                                                      const std::string& pattern = "%v") {
  auto logger =
      std::make_shared<spdlog::logger>(name, std::make_shared<spdlog::sinks::ostream_sink_st>(out));
  logger->set_pattern(pattern);
  return logger;
}

/// What simprof logs (its "simprof" logger), captured while this lives; the logger registered
/// before comes back after.
class SimprofLog {
 public:
  SimprofLog() : previous_(spdlog::get("simprof")) {
    spdlog::drop("simprof");
    spdlog::register_logger(capture_logger(out_, "simprof"));
  }
  ~SimprofLog() {
    spdlog::drop("simprof");
    if (previous_) spdlog::register_logger(previous_);
  }
  SimprofLog(const SimprofLog&) = delete;
  SimprofLog& operator=(const SimprofLog&) = delete;
  std::string str() const { return out_.str(); }
  void clear() { out_.str(""); }
  /// How many times `needle` occurs in what was logged.
  int count(const std::string& needle) const {
    const std::string s = out_.str();
    int n = 0;
    for (auto at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
    return n;
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

/// A file's whole text ("" when it cannot be read).
inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace simprof::testing
