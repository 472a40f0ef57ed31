// SPDX-License-Identifier: MIT
// A run record as `simprof compare` reads it (schema simprof.run/2, docs/comparing.md): its
// provenance and its runs (one, or speed_benchmark's several), each a workload and its series of
// per-step samples (stages on the host and the device clock, the FPS line's rates). Private to
// src/compare.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace simprof::compare {

using Json = nlohmann::ordered_json;

/// The one schema compare reads.
inline constexpr const char* kSchema = "simprof.run/2";

/// Bad input: a file that is not a run record, another schema, a malformed field. The message
/// names the file and what was expected.
struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One series of samples: a stage's time per step on one clock, or the FPS line's rates.
struct Series {
  std::string clock;  ///< "host", "device" or "fps"
  std::string name;   ///< the stage's path ("physics/contacts", "step", "period"); "rate" for fps
  int depth = 0;      ///< nesting level, for the table
  std::vector<double> samples;   ///< seconds; steps per second per env for the FPS rate
  bool larger_is_slower = true;  ///< false for a rate
};

/// One run of a record: what decides the work a step does, and its series.
struct Run {
  Json workload;      ///< the keys that must match ({"n_envs": 4096, "mode": "graph", ...})
  std::string label;  ///< the workload in one line: "mode=graph, n_envs=4096"
  std::vector<Series> series;
  std::string launches;  ///< how simprof run saw the device launches ("hook", "cupti"; "": unsaid)
};

/// A record: where it came from (`name`: the file), its provenance and its runs.
struct Record {
  std::string name;
  Json provenance;
  std::vector<Run> runs;
};

/// Parses `text` as the record named `name`; BadInput naming it and the field otherwise.
Record parse_record(const std::string& text, const std::string& name);
/// parse_record() of the file at `path`; BadInput when it cannot be read.
Record load_record(const std::string& path);

/// What differs between the two records in what decides a step's time, each "what: base vs new":
/// the machine's GPUs, the build type, a run's workload present on one side only. Empty: they
/// can be compared.
std::vector<std::string> not_comparable(const Record& base, const Record& changed);

/// Whether `r` holds a run of `workload` (the runs compare pairs with each other).
bool has_workload(const Record& r, const Json& workload);

}  // namespace simprof::compare
