// SPDX-License-Identifier: MIT
// Private to the C API's sources (src/c): the handles every room shares, and the wrapper that turns
// what the library throws into a status and the thread's last message. No exception crosses the C
// boundary: every call that can throw runs inside guarded().
#pragma once

#include "simprof/c/simprof.h"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "simprof/base/manual_clock.hpp"
#include "simprof/profiler/collective.hpp"
#include "simprof/profiler/run_record.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/trace/session.hpp"
#if SIMPROF_C_CUDA
#include "simprof/cuda/runtime/error.hpp"
#endif

namespace simprof::c_api {
// A timings map as name/value pairs for C, whose names stay valid until the next copy.
using TimingPairs = std::vector<std::pair<std::string, double>>;

// An options struct from C: the defaults where `options` is null, else a copy of it once its
// `size` says it is the struct this library knows (its _init was called).
template <class Options>
Options checked_options(const Options* options, void (*init)(Options*), const char* name) {
  Options o;
  init(&o);
  if (options == nullptr) return o;
  if (options->size != sizeof(o))
    throw std::invalid_argument(
        fmt::format("simprof: {}.size = {} (expected {}: call {}_init first)", name, options->size,
                    sizeof(o), name));
  return *options;
}
}  // namespace simprof::c_api

struct simprof_options {
  simprof::ProfilingOptions options;
};

struct simprof_manual_clock {
  simprof::ManualClock clock;
};

struct simprof_profiler {
  simprof::StepProfiler prof;
  simprof::c_api::TimingPairs timings;  // the latest simprof_timings_count
  // The process groups collectives named, one of each: a trace session keeps a pointer to a
  // collective's group until its window is written, so they live as long as the profiler.
  std::deque<simprof::ProcessGroup> groups;
  simprof_profiler(const simprof::ProfilingOptions& o, std::int64_t n) : prof(o, n) {}
  simprof_profiler(const simprof::ProfilingOptions& o, std::int64_t n, const simprof::Clock& c)
      : prof(o, n, c) {}
};

struct simprof_trace {
  simprof::TraceSession session;
  std::vector<std::string> files;  // the latest simprof_trace_files_count
  simprof_trace(simprof::StepProfiler& p, const simprof::TraceOptions& o) : session(p, o) {}
};

// Shared by the library's own sources only: nothing here is exported from libsimprof_c.so (the C
// functions of simprof.h are its interface).
#pragma GCC visibility push(hidden)
namespace simprof::c_api {

// A run record's info from C's arguments (simprof_write_run_record): NULL tool for the default;
// a NULL key or value is std::invalid_argument naming its pair.
simprof::RunRecordInfo record_info(const char* tool, const char* const* keys,
                                   const char* const* values, size_t n);

// Keeps `message` as the calling thread's last error (simprof_last_error) and returns `s`.
simprof_status fail(simprof_status s, std::string message);

// Runs `f`, mapping what it throws to a status (the library's message kept).
template <class F>
simprof_status guarded(F&& f) noexcept {
  try {
    f();
    return SIMPROF_OK;
  } catch (const std::invalid_argument& e) {
    return fail(SIMPROF_INVALID_ARGUMENT, e.what());
  } catch (const std::out_of_range& e) {
    return fail(SIMPROF_INVALID_ARGUMENT, e.what());
  } catch (const std::logic_error& e) {
    return fail(SIMPROF_LOGIC_ERROR, e.what());
#if SIMPROF_C_CUDA
  } catch (const simprof::cuda::CudaError& e) {
    return fail(SIMPROF_CUDA_ERROR, e.what());
#endif
  } catch (const std::bad_alloc&) {
    return fail(SIMPROF_ERROR, "simprof: out of memory");
  } catch (const std::exception& e) {
    return fail(SIMPROF_ERROR, e.what());
  } catch (...) {
    return fail(SIMPROF_ERROR, "simprof: an unknown exception");
  }
}

// A null handle or out pointer: named.
template <class T>
bool missing(const T* p, const char* what, simprof_status* s) {
  if (p != nullptr) return false;
  *s = fail(SIMPROF_INVALID_ARGUMENT, std::string("simprof: ") + what + " is NULL");
  return true;
}

// A string into the caller's buffer (NUL-terminated, truncated) and the bytes it needs.
void copy_out(const std::string& t, char* buf, size_t cap, size_t* needed);

// Fills `out` from a timings map (the profiler's or a device timer's): the *_timings_count calls.
template <class Timings>
simprof_status copy_timings(const Timings& timings, TimingPairs& out, size_t* count) noexcept {
  return guarded([&] {
    out.clear();
    timings.for_each([&](std::string_view n, double v) { out.emplace_back(std::string(n), v); });
    *count = out.size();
  });
}
// Pair `index` of `pairs`; an index past the end is refused, naming `count_call` that sizes it.
simprof_status timing_at(const TimingPairs& pairs, size_t index, const char** name, double* seconds,
                         const char* count_call);

}  // namespace simprof::c_api
#pragma GCC visibility pop

#define SIMPROF_C_REQUIRE(p, what)                              \
  do {                                                          \
    simprof_status s_ = SIMPROF_OK;                             \
    if (::simprof::c_api::missing((p), (what), &s_)) return s_; \
  } while (0)
