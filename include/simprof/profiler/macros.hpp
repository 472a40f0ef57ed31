// SPDX-License-Identifier: MIT
// SIMPROF_STEP and SIMPROF_STAGE: step and stage scopes per call site, without stage-id tables,
// that compile to nothing when SIMPROF_DISABLE is defined (in the manner of NVTX_DISABLE and
// Tracy's zones).
//
// example: file
/* clang-format off */
//   #include <simprof/profiler/macros.hpp>
//   void Engine::step() {                       // prof_: a StepProfiler*, null when not profiling
//     SIMPROF_STEP(prof_);                      // the rest of this block is one step
//     { SIMPROF_STAGE(prof_, "physics");     solver_.run(); }
//     { SIMPROF_STAGE(prof_, "sensors/Imu"); imu_.update(); }
//   }
/* clang-format on */
//
// `prof` is a StepProfiler or a pointer to one (a null pointer: nothing is measured). The stage
// name must be a string literal: the site looks its id up on the first pass and caches it in a
// function-local static, keyed by the profiler's instance id, so one site serves any number of
// profilers. After the first pass a SIMPROF_STAGE costs a StageScope with a StageId plus a load and
// a compare. The scopes end with the enclosing block; two on one line are not allowed. A step
// vetoed by a pre-step callback still runs its block under SIMPROF_STEP: use prof.step() to skip
// vetoed steps.
//
// With SIMPROF_DISABLE defined (CMake: -DSIMPROF_DISABLE=ON where the consumer adds simprof) both
// expand to nothing that runs: `prof` is not evaluated and the translation unit references no
// simprof symbol. Only StepProfiler is declared then; code that makes a profiler or reads its
// results is the user's to fence with `#if SIMPROF_ENABLED`.
#pragma once

#define SIMPROF_CONCAT_IMPL(a, b) a##b
#define SIMPROF_CONCAT(a, b) SIMPROF_CONCAT_IMPL(a, b)

#if defined(SIMPROF_DISABLE)

#define SIMPROF_ENABLED 0
namespace simprof {
class StepProfiler;
}
// Unevaluated: `prof` and `name` are still checked (a name must be a literal) and count as used.
#define SIMPROF_STEP(prof) static_cast<void>(sizeof(static_cast<void>(prof), 0))
#define SIMPROF_STAGE(prof, name) static_cast<void>(sizeof(static_cast<void>(prof), "" name))

#else

#define SIMPROF_ENABLED 1
#include "simprof/profiler/step_profiler.hpp"

namespace simprof::detail {
inline StepProfiler* profiler_ptr(StepProfiler& prof) noexcept { return &prof; }
inline StepProfiler* profiler_ptr(StepProfiler* prof) noexcept { return prof; }
}  // namespace simprof::detail

#define SIMPROF_STEP(prof)                                   \
  ::simprof::OptionalStepScope SIMPROF_CONCAT(simprof_step_, \
                                              __LINE__)(::simprof::detail::profiler_ptr(prof))
#define SIMPROF_STAGE(prof, name)                                                       \
  static ::simprof::detail::StageSite SIMPROF_CONCAT(simprof_site_, __LINE__){"" name}; \
  ::simprof::OptionalStageScope SIMPROF_CONCAT(simprof_stage_, __LINE__)(               \
      ::simprof::detail::profiler_ptr(prof), SIMPROF_CONCAT(simprof_site_, __LINE__))

#endif
