// SPDX-License-Identifier: MIT
// Trace events and a Chrome Trace Event JSON writer that Perfetto, chrome://tracing and the
// analysis tools that read PyTorch/Kineto traces can load.
//
//   simprof::Trace t;
//   t.events.push_back(simprof::TraceEvent::complete("physics", "cpu_op", ts_ns, dur_ns, pid,
//   tid)); simprof::write_chrome_trace(t, "step.json");   // atomic: a temporary file, then rename
//
// Times are nanoseconds in one timebase; the writer prints microseconds with three decimals
// (exact: integer arithmetic, no float rounding), as Kineto does.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace simprof {

using TraceValue = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>>;

struct TraceEvent {
  char ph = 'X';  ///< X complete, i instant, C counter, s/f flow start/end, M metadata
  std::string name;
  std::string cat;
  std::int64_t ts_ns = 0;
  std::int64_t dur_ns = 0;  ///< complete events only
  std::int64_t pid = 0;
  std::int64_t tid = 0;
  std::uint64_t id = 0;  ///< flows: the pair's id
  std::vector<std::pair<std::string, TraceValue>> args;

  static TraceEvent complete(std::string name, std::string cat, std::int64_t ts_ns,
                             std::int64_t dur_ns, std::int64_t pid, std::int64_t tid);
  static TraceEvent counter(std::string name, std::int64_t ts_ns, std::int64_t pid,
                            std::vector<std::pair<std::string, TraceValue>> values);
  static TraceEvent instant(std::string name, std::string cat, std::int64_t ts_ns, std::int64_t pid,
                            std::int64_t tid);
  /// A flow arrow from (pid, tid) at ts (ph 's') ...
  static TraceEvent flow_start(std::uint64_t id, std::int64_t ts_ns, std::int64_t pid,
                               std::int64_t tid);
  /// ... to the event enclosing ts on (pid, tid) (ph 'f', binding to the enclosing slice).
  static TraceEvent flow_end(std::uint64_t id, std::int64_t ts_ns, std::int64_t pid,
                             std::int64_t tid);
  static TraceEvent process_name(std::int64_t pid, std::string name);
  static TraceEvent thread_name(std::int64_t pid, std::int64_t tid, std::string name);
};

struct Trace {
  std::vector<TraceEvent> events;
  std::map<std::string, std::string> metadata;  ///< written under "otherData"
  std::uint64_t dropped = 0;                    ///< events lost by any source (also in otherData)
};

/// `s` as the body of a JSON string: quotes, backslashes and control characters escaped; valid
/// UTF-8 passes through; invalid bytes become U+FFFD.
std::string json_escape(std::string_view s);

/// The trace as Chrome Trace Event JSON: {"traceEvents": [...], "displayTimeUnit": "ns",
/// "otherData": {...}}. Metadata events first, then by time (stable).
std::string to_chrome_json(const Trace& trace);

/// Writes to_chrome_json() to `path` atomically. Throws std::runtime_error naming the path.
void write_chrome_trace(const Trace& trace, const std::string& path);

}  // namespace simprof
