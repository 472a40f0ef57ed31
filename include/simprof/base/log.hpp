// SPDX-License-Identifier: MIT
// Where simprof's messages go: one spdlog logger, named "simprof", shared by every class that logs
// (the FPS line, warnings about dropped events, capture diagnoses). One place owns it, the spdlog
// habit: register your own logger under that name before the first message to redirect everything.
//
/* clang-format off */
//   #include <spdlog/sinks/basic_file_sink.h>
//   auto mine = spdlog::basic_logger_mt("simprof", "sim.log");  // before simprof logs anything
//   simprof::default_logger()->info("hello");                    // goes to sim.log
/* clang-format on */
#pragma once

#include <memory>

namespace spdlog {
class logger;
}

namespace simprof {

/// The logger named "simprof", created (stdout, colour) on first use unless the user registered one
/// under that name before. Thread-safe.
std::shared_ptr<spdlog::logger> default_logger();

}  // namespace simprof
