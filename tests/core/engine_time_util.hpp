// SPDX-License-Identifier: MIT
// What the engine-time tests share: a profiler with statistics, a traced session on the manual
// clock, a step with one zone, spans by name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simprof/base/manual_clock.hpp"
#include "simprof/profiler/engine_zones.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/trace/session.hpp"
#include "test_util.hpp"

namespace simprof::testing {

inline ProfilingOptions with_stats() {
  ProfilingOptions o = quiet();
  o.stats_window = 16;
  return o;
}

// A trace session recording every step into `traces`, on the manual clock's own nanoseconds.
struct Traced {
  explicit Traced(StepProfiler& prof) : session(prof, options()) {
    session.on_trace_ready([this](const Trace& t, std::uint64_t) { traces.push_back(t); });
  }
  static TraceOptions options() {
    TraceOptions o;
    o.schedule = Schedule{0, 0, 1, 1, 0};  // the first step, traced
    o.wall_clock = false;
    return o;
  }
  const Span* find(const std::string& name) const {
    for (const Span& s : traces.at(0).spans)
      if (s.name == name) return &s;
    return nullptr;
  }
  TraceSession session;
  std::vector<Trace> traces;
};

// One step in which the loop's thread runs one zone `name` of `ns` on the manual clock.
inline void step_with_zone(StepProfiler& prof, EngineZones& zones, ManualClock& mc,
                           const char* name, std::int64_t ns) {
  auto step = prof.step();
  zones.enter(name);
  mc.advance_ns(ns);
  zones.leave();
}

// The spans of `trace` named `name`.
inline std::vector<const Span*> named(const Trace& trace, const std::string& name) {
  std::vector<const Span*> out;
  for (const Span& s : trace.spans)
    if (s.name == name) out.push_back(&s);
  return out;
}

}  // namespace simprof::testing
