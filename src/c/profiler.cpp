// SPDX-License-Identifier: MIT
// The C API's step profiler (room profiler): its options, steps and stages, the timings map, the
// stage table and the FPS line.
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "c_api_internal.hpp"
#include "simprof/profiler/report.hpp"
#include "simprof/profiler/run_record.hpp"

simprof::RunRecordInfo simprof::c_api::record_info(const char* tool, const char* const* keys,
                                                   const char* const* values, size_t n) {
  RunRecordInfo info;
  if (tool) info.tool = tool;
  for (size_t i = 0; i < n; ++i) {
    if (keys[i] == nullptr || values[i] == nullptr)
      throw std::invalid_argument(fmt::format("simprof: workload pair {} is NULL", i));
    info.workload.emplace_back(keys[i], values[i]);
  }
  return info;
}

using simprof::c_api::copy_out;
using simprof::c_api::fail;
using simprof::c_api::guarded;
using simprof::c_api::record_info;

namespace {

// Sets a field on a copy, validates the copy (the message names the field and the value), keeps it.
template <class Apply>
simprof_status set_option(simprof_options* o, Apply&& apply) {
  SIMPROF_C_REQUIRE(o, "options");
  return guarded([&] {
    simprof::ProfilingOptions next = o->options;
    apply(next);
    next.validate();
    o->options = next;
  });
}

simprof::StageId stage_of(const simprof::StepProfiler& prof, const char* name) {
  if (name == nullptr) throw std::invalid_argument("simprof: stage name is NULL");
  const simprof::StageId id = prof.find_stage(name);
  if (id == simprof::kNoStage)
    throw std::invalid_argument(std::string("simprof: no stage named '") + name +
                                "' has begun (expected the name given to simprof_stage_begin)");
  return id;
}

}  // namespace

extern "C" {

simprof_status simprof_options_new(simprof_options** out) {
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    auto o = std::make_unique<simprof_options>();
    o->options = simprof::ProfilingOptions::from_env();
    *out = o.release();
  });
}

void simprof_options_free(simprof_options* options) { delete options; }

simprof_status simprof_options_set_show_fps(simprof_options* o, int show) {
  return set_option(o, [&](simprof::ProfilingOptions& p) { p.show_fps = show != 0; });
}

simprof_status simprof_options_set_alpha(simprof_options* o, double alpha) {
  return set_option(o, [&](simprof::ProfilingOptions& p) { p.fps_tracker_alpha = alpha; });
}

simprof_status simprof_options_set_interval_ms(simprof_options* o, double ms) {
  // Checked before the conversion to nanoseconds, which could overflow.
  if (!(ms > 0) || !(ms <= 1e9))
    return fail(SIMPROF_INVALID_ARGUMENT,
                "simprof: fps_sample_interval = " + std::to_string(ms) +
                    " ms (expected a finite number of milliseconds > 0 and <= 1e9)");
  return set_option(o, [&](simprof::ProfilingOptions& p) {
    p.fps_sample_interval = std::chrono::nanoseconds(static_cast<std::int64_t>(ms * 1e6));
  });
}

simprof_status simprof_options_set_timings_window(simprof_options* o, uint64_t steps) {
  return set_option(
      o, [&](simprof::ProfilingOptions& p) { p.timings_window = static_cast<std::size_t>(steps); });
}

simprof_status simprof_options_set_stats_window(simprof_options* o, uint64_t steps) {
  return set_option(
      o, [&](simprof::ProfilingOptions& p) { p.stats_window = static_cast<std::size_t>(steps); });
}

simprof_status simprof_profiler_new(const simprof_options* options, int64_t n_envs,
                                    simprof_profiler** out) {
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  return guarded([&] {
    const simprof::ProfilingOptions o =
        options ? options->options : simprof::ProfilingOptions::from_env();
    *out = new simprof_profiler(o, n_envs);
  });
}

simprof_status simprof_profiler_new_with_clock(const simprof_options* options, int64_t n_envs,
                                               const simprof_manual_clock* clock,
                                               simprof_profiler** out) {
  SIMPROF_C_REQUIRE(out, "out");
  *out = nullptr;
  SIMPROF_C_REQUIRE(clock, "clock");
  return guarded([&] {
    const simprof::ProfilingOptions o =
        options ? options->options : simprof::ProfilingOptions::from_env();
    *out = new simprof_profiler(o, n_envs, clock->clock.clock());
  });
}

void simprof_profiler_free(simprof_profiler* prof) { delete prof; }

simprof_status simprof_step_begin(simprof_profiler* p) {
  SIMPROF_C_REQUIRE(p, "profiler");
  return guarded([&] { p->prof.begin_step(); });
}

simprof_status simprof_step_end(simprof_profiler* p, int* published) {
  SIMPROF_C_REQUIRE(p, "profiler");
  return guarded([&] {
    const bool ok = p->prof.end_step();
    if (published) *published = ok ? 1 : 0;
  });
}

simprof_status simprof_step_veto(simprof_profiler* p) {
  SIMPROF_C_REQUIRE(p, "profiler");
  return guarded([&] { p->prof.veto_step(); });
}

simprof_status simprof_stage_begin(simprof_profiler* p, const char* name) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(name, "stage name");
  return guarded([&] { p->prof.begin_stage(p->prof.stage_id(name)); });
}

simprof_status simprof_stage_end(simprof_profiler* p, const char* name) {
  SIMPROF_C_REQUIRE(p, "profiler");
  return guarded([&] { p->prof.end_stage(stage_of(p->prof, name)); });
}

simprof_status simprof_timings_count(simprof_profiler* p, size_t* count) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(count, "count");
  return simprof::c_api::copy_timings(p->prof.timings(), p->timings, count);
}

simprof_status simprof_timings_get(const simprof_profiler* p, size_t index, const char** name,
                                   double* seconds) {
  SIMPROF_C_REQUIRE(p, "profiler");
  return simprof::c_api::timing_at(p->timings, index, name, seconds, "simprof_timings_count");
}

simprof_status simprof_timing(const simprof_profiler* p, const char* stage, double* seconds) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(stage, "stage name");
  SIMPROF_C_REQUIRE(seconds, "seconds");
  return guarded([&] { *seconds = p->prof.timings().at(stage); });
}

simprof_status simprof_stage_table(const simprof_profiler* p, char* buf, size_t cap,
                                   size_t* needed) {
  SIMPROF_C_REQUIRE(p, "profiler");
  return guarded([&] { copy_out(simprof::stage_table(p->prof), buf, cap, needed); });
}

simprof_status simprof_write_run_record(const simprof_profiler* p, const char* path,
                                        const char* tool, const char* const* keys,
                                        const char* const* values, size_t n) {
  SIMPROF_C_REQUIRE(p, "profiler");
  SIMPROF_C_REQUIRE(path, "path");
  if (n > 0) {
    SIMPROF_C_REQUIRE(keys, "workload keys");
    SIMPROF_C_REQUIRE(values, "workload values");
  }
  return guarded(
      [&] { simprof::write_run_record(p->prof, path, record_info(tool, keys, values, n)); });
}

uint64_t simprof_steps(const simprof_profiler* p) { return p ? p->prof.steps() : 0; }

simprof_status simprof_fps(const simprof_profiler* p, double* total_fps, double* fps_per_env) {
  SIMPROF_C_REQUIRE(p, "profiler");
  if (total_fps) *total_fps = p->prof.fps().total_fps();
  if (fps_per_env) *fps_per_env = p->prof.fps().fps_per_env();
  return SIMPROF_OK;
}

simprof_status simprof_set_show_fps(simprof_profiler* p, int show) {
  SIMPROF_C_REQUIRE(p, "profiler");
  p->prof.set_show_fps(show != 0);
  return SIMPROF_OK;
}

simprof_status simprof_fps_flush(simprof_profiler* p) {
  SIMPROF_C_REQUIRE(p, "profiler");
  return guarded([&] { p->prof.fps().flush(); });
}

simprof_status simprof_fps_reset(simprof_profiler* p) {
  SIMPROF_C_REQUIRE(p, "profiler");
  return guarded([&] { p->prof.fps().reset(); });
}

simprof_status simprof_set_fps_callback(simprof_profiler* p, simprof_fps_callback callback,
                                        void* user) {
  SIMPROF_C_REQUIRE(p, "profiler");
  return guarded([&] {
    if (callback == nullptr) {
      p->prof.fps().set_callback(nullptr);
      return;
    }
    p->prof.fps().set_callback([callback, user](const simprof::FpsSample& s) {
      callback(s.total_fps, s.fps_per_env, s.n_envs, user);
    });
  });
}

}  // extern "C"
