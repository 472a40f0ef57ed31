/* SPDX-License-Identifier: MIT */
/* The smallest real use of simprof::c (the C API), built by ctest as an outside project. */
#include <math.h>
#include <stdio.h>

#include <simprof/c/simprof.h>

int main(void) {
  simprof_manual_clock* clock = NULL;
  simprof_options* options = NULL;
  simprof_profiler* prof = NULL;
  double physics = -1;
  int ok = simprof_manual_clock_new(&clock) == SIMPROF_OK &&
           simprof_options_new(&options) == SIMPROF_OK &&
           simprof_options_set_show_fps(options, 0) == SIMPROF_OK &&
           simprof_profiler_new_with_clock(options, 16, clock, &prof) == SIMPROF_OK &&
           simprof_step_begin(prof) == SIMPROF_OK &&
           simprof_stage_begin(prof, "physics") == SIMPROF_OK &&
           simprof_manual_clock_advance_ns(clock, 1000000) == SIMPROF_OK &&
           simprof_stage_end(prof, "physics") == SIMPROF_OK &&
           simprof_step_end(prof, NULL) == SIMPROF_OK &&
           simprof_timing(prof, "physics", &physics) == SIMPROF_OK && fabs(physics - 0.001) < 1e-15;
  simprof_profiler_free(prof);
  simprof_options_free(options);
  simprof_manual_clock_free(clock);
  printf("%s\n", ok ? "c consumer ok" : "c consumer FAILED");
  return ok ? 0 : 1;
}
