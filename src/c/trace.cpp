// SPDX-License-Identifier: MIT
// The C API's trace room: a trace session over a profiler, and the files it wrote.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "c_api_internal.hpp"

using simprof::c_api::fail;
using simprof::c_api::guarded;

extern "C" {

simprof_status simprof_trace_new(simprof_profiler* p, int64_t wait, int64_t warmup, int64_t active,
                                 int64_t repeat, int64_t skip_first, const char* dir, int flags,
                                 simprof_trace** out) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    if (flags < 0 || flags > SIMPROF_SESSION_BACKGROUND)
      throw std::invalid_argument("simprof: trace session flags = " + std::to_string(flags) +
                                  " (expected 0 or SIMPROF_SESSION_BACKGROUND = 1)");
    simprof::TraceOptions o;
    o.schedule = simprof::Schedule{wait, warmup, active, repeat, skip_first};
    if (dir) o.dir = dir;
    o.background = (flags & SIMPROF_SESSION_BACKGROUND) != 0;
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
