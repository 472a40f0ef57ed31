// SPDX-License-Identifier: MIT
// The C API's trace room: a trace session over a profiler, and the files it wrote.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "c_api_internal.hpp"

using simprof::c_api::fail;
using simprof::c_api::guarded;

extern "C" {

void simprof_trace_options_init(simprof_trace_options* o) {
  if (o == nullptr) return;
  const simprof::Schedule d;
  *o = simprof_trace_options{sizeof(*o), d.wait,       d.warmup, d.active,
                             d.repeat,   d.skip_first, nullptr,  0};
}

simprof_status simprof_trace_new(simprof_profiler* p, const simprof_trace_options* options,
                                 simprof_trace** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    const simprof_trace_options c = simprof::c_api::checked_options(
        options, simprof_trace_options_init, "simprof_trace_options");
    if (c.flags < 0 || c.flags > SIMPROF_SESSION_BACKGROUND)
      throw std::invalid_argument(
          "simprof: simprof_trace_options.flags = " + std::to_string(c.flags) +
          " (expected 0 or SIMPROF_SESSION_BACKGROUND = 1)");
    simprof::TraceOptions o;
    o.schedule = simprof::Schedule{c.wait, c.warmup, c.active, c.repeat, c.skip_first};
    if (c.dir) o.dir = c.dir;
    o.background = (c.flags & SIMPROF_SESSION_BACKGROUND) != 0;
    *out = new simprof_trace(p->prof, o);
  });
}

void simprof_trace_free(simprof_trace* trace) { delete trace; }

simprof_status simprof_trace_wait(simprof_trace* t) {
  SIMPROF_C_REQUIRE(t, "trace");
  return guarded([&] { t->session.wait(); });
}

uint64_t simprof_trace_windows(const simprof_trace* t) { return t ? t->session.windows() : 0; }
uint64_t simprof_trace_dropped(const simprof_trace* t) { return t ? t->session.dropped() : 0; }

simprof_status simprof_trace_files_count(simprof_trace* t, size_t* count) {
  SIMPROF_C_REQUIRE(t, "trace");
  SIMPROF_C_REQUIRE(count, "count");
  return guarded([&] {
    t->files = t->session.files();
    *count = t->files.size();
  });
}

simprof_status simprof_trace_file(const simprof_trace* t, size_t index, const char** path) {
  SIMPROF_C_REQUIRE(t, "trace");
  SIMPROF_C_REQUIRE(path, "path");
  if (index >= t->files.size())
    return fail(SIMPROF_INVALID_ARGUMENT, "simprof: trace file index " + std::to_string(index) +
                                              " (expected < " + std::to_string(t->files.size()) +
                                              ", from simprof_trace_files_count)");
  *path = t->files[index].c_str();
  return SIMPROF_OK;
}

}  // extern "C"
