// SPDX-License-Identifier: MIT
// The C API's base room: the manual clock (time the caller advances) and the running mean.
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "c_api_internal.hpp"
#include "simprof/base/running_mean.hpp"

using simprof::c_api::fail;
using simprof::c_api::guarded;

struct simprof_running_mean {
  simprof::RunningMean mean;
};

extern "C" {

simprof_status simprof_manual_clock_new(simprof_manual_clock** out) {
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] { *out = new simprof_manual_clock(); });
}

void simprof_manual_clock_free(simprof_manual_clock* clock) { delete clock; }

simprof_status simprof_manual_clock_advance_ns(simprof_manual_clock* clock, int64_t ns) {
  SIMPROF_C_REQUIRE(clock, "clock");
  if (ns < 0)
    return fail(SIMPROF_INVALID_ARGUMENT,
                fmt::format("simprof: manual clock advance_ns = {} (expected >= 0: time does not "
                            "run backwards)",
                            ns));
  clock->clock.advance_ns(ns);
  return SIMPROF_OK;
}

simprof_status simprof_manual_clock_now_ns(const simprof_manual_clock* clock, int64_t* ns) {
  SIMPROF_C_REQUIRE(clock, "clock");
  SIMPROF_C_REQUIRE(ns, "ns");
  *ns = clock->clock.now_ns();
  return SIMPROF_OK;
}

simprof_status simprof_running_mean_new_window(size_t window, simprof_running_mean** out) {
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] { *out = new simprof_running_mean{simprof::RunningMean(window)}; });
}

simprof_status simprof_running_mean_new_ema(double alpha, simprof_running_mean** out) {
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] { *out = new simprof_running_mean{simprof::RunningMean::ema(alpha)}; });
}

void simprof_running_mean_free(simprof_running_mean* mean) { delete mean; }

simprof_status simprof_running_mean_update(simprof_running_mean* m, double x) {
  SIMPROF_C_REQUIRE(m, "running mean");
  return guarded([&] { m->mean.update(x); });
}

double simprof_running_mean_value(const simprof_running_mean* m) {
  return m ? m->mean.value() : std::numeric_limits<double>::quiet_NaN();
}

uint64_t simprof_running_mean_count(const simprof_running_mean* m) {
  return m ? m->mean.count() : 0;
}

}  // extern "C"
