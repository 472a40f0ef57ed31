// SPDX-License-Identifier: MIT
// The run record: a profile written for `simprof compare` (schema simprof.run/2,
// docs/comparing.md): where it came from, what the step did, and per stage the samples behind its
// statistics, so two runs can be tested against each other rather than read by eye.
//
/* clang-format off */
//   simprof::RunRecordInfo info;
//   info.workload = {{"scene", "go2"}, {"solver", "newton"}};
//   simprof::write_run_record(prof, "base.json", info);  // later: simprof compare base.json new.json
/* clang-format on */
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "simprof/profiler/report.hpp"
#include "simprof/profiler/step_profiler.hpp"

namespace simprof {

/// The schema every run record names.
inline constexpr const char* kRunRecordSchema = "simprof.run/2";
/// The most samples a record keeps per stage: the stats window's samples, evenly spaced over it
/// when it holds more.
inline constexpr std::size_t kRunRecordSamples = 4096;

/// What a record says besides the profile.
struct RunRecordInfo {
  /// The provenance's "tool": who wrote the record.
  std::string tool = "simprof";
  /// The provenance's "command"; "" for this process's command line.
  std::string command;
  /// What decides the work of a step besides n_envs (scene, solver, options): `simprof compare`
  /// refuses two records whose workloads differ.
  std::vector<std::pair<std::string, std::string>> workload;
  /// Stage rows on the GPU's clock (cuda::device_record_rows()): written as the record's
  /// "device" object, which `simprof compare` tests like the host's. Empty: no "device".
  std::vector<StageRow> device_stages;
};

/// The record of `prof` as JSON: {"schema", "provenance", "workload", "n_envs", "steps", "clock",
/// "stages" (stage_rows() with "samples_s"), "fps" (the rate and its unsmoothed samples), and
/// "device" {"clock", "stages"} where info.device_stages holds rows}. Needs
/// stats_window > 0 (std::invalid_argument otherwise).
std::string run_record_json(const StepProfiler& prof, const RunRecordInfo& info = {});

/// run_record_json() written to `path` atomically: a reader never sees half of one. Throws
/// std::runtime_error naming the path and the reason. The process's first record runs
/// `nvidia-smi` for the GPUs' clocks (another process, once): write it between
/// runs, not inside a timed loop.
void write_run_record(const StepProfiler& prof, const std::string& path,
                      const RunRecordInfo& info = {});

namespace detail {
/// The provenance object: tool, simprof's commit and build type, compiler, date, host, CPU, the
/// NVIDIA driver, GPUs and their clocks (nvidia-smi's, when first asked), the command.
std::string provenance_json(const std::string& tool, const std::string& command);
/// Stage rows as a JSON array, each with its samples ("samples_s", at most kRunRecordSamples).
std::string stage_rows_json(const std::vector<StageRow>& rows);
/// The FPS line as an object: its clock, rate, sample count and unsmoothed per-env rates.
std::string fps_json(const FpsTracker& fps);
}  // namespace detail

}  // namespace simprof
