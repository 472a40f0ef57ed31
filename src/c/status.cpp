// SPDX-License-Identifier: MIT
// The C API's status: the calling thread's last message, the version, whether the CUDA backend is
// built; and the shared helpers that write them (c_api_internal.hpp).
#include <string>
#include <utility>

#include "c_api_internal.hpp"

namespace simprof::c_api {

namespace {
thread_local std::string t_error;
}  // namespace

simprof_status fail(simprof_status s, std::string message) {
  try {
    t_error = std::move(message);
  } catch (...) {
  }
  return s;
}

void copy_out(const std::string& t, char* buf, size_t cap, size_t* needed) {
  if (needed) *needed = t.size() + 1;
  if (buf && cap) {
    const size_t n = t.size() < cap - 1 ? t.size() : cap - 1;
    t.copy(buf, n);
    buf[n] = '\0';
  }
}

simprof_status timing_at(const TimingPairs& pairs, size_t index, const char** name, double* seconds,
                         const char* count_call) {
  if (index >= pairs.size())
    return fail(SIMPROF_INVALID_ARGUMENT, "simprof: timing index " + std::to_string(index) +
                                              " (expected < " + std::to_string(pairs.size()) +
                                              ", from " + count_call + ")");
  if (name) *name = pairs[index].first.c_str();
  if (seconds) *seconds = pairs[index].second;
  return SIMPROF_OK;
}

}  // namespace simprof::c_api

extern "C" {

const char* simprof_last_error(void) { return simprof::c_api::t_error.c_str(); }
const char* simprof_version(void) { return "0.1.0"; }
int simprof_has_cuda(void) { return SIMPROF_C_CUDA ? 1 : 0; }

}  // extern "C"
