// SPDX-License-Identifier: MIT
// What one speed_benchmark run measured, as plain data, and --json FILE: the run as JSON (both
// backends) with its provenance, so a figure can be traced to the machine, build and command.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "args.hpp"
#include "run_json.hpp"
#include "simprof/memory/tracker.hpp"
#include "simprof/profiler/report.hpp"

namespace simprof::examples {

/// The GPU a CUDA run ran on (empty name on the CPU backend).
struct GpuInfo {
  std::string name;
  int compute_capability = 0;       ///< major * 10 + minor
  int driver_version = 0;           ///< cudaDriverGetVersion: 13000 for CUDA 13.0 (the API's)
  int runtime_version = 0;          ///< cudaRuntimeGetVersion
  double sm_clock_mhz = 0;          ///< measured at start: clock64 cycles over global-timer ns
  double sm_clock_nominal_mhz = 0;  ///< cudaDevAttrClockRate
};

struct GraphCacheRecord {
  std::uint64_t warmup_runs = 0, captures = 0, instantiations = 0, replays = 0;
  double capture_s = 0, instantiate_s = 0;  ///< the key's cold start
};

struct PacerRecord {
  int max_in_flight = 0;  ///< 0: unbounded
  std::uint64_t waits = 0, most_in_flight = 0;
  double wait_s = 0;
};

/// --memory: per step, what each stage allocated (MemoryTracker), and the peaks.
struct MemoryRow {
  std::string name;
  int depth = 0;
  double device_allocs = 0, device_bytes = 0, host_allocs = 0, host_bytes = 0;  ///< per step
};

struct MemoryRecord {
  std::vector<MemoryRow> stages;
  std::int64_t device_peak_bytes = -1;  ///< counted CUDA allocations since the run began (-1: none)
  std::int64_t device_in_use_bytes = -1;  ///< at the last step's end
  std::int64_t graph_memory_bytes = 0;    ///< held by the graph cache's executables
  std::uint64_t steady_allocating_steps = 0;
  std::int64_t host_peak_resident_kib = -1;  ///< VmHWM: the process's resident peak
};

/// The tracker's rows (stage_table's order) and peaks.
MemoryRecord memory_record(const StepProfiler& prof, const MemoryTracker& memory,
                           std::int64_t graph_memory_bytes);
/// "memory: device peak ... ; host ..." — the line printed at the end of a --memory run.
std::string memory_line(const MemoryRecord& m);

struct RunRecord {
  std::string backend;  ///< "cpu" or "cuda"
  std::string mode;     ///< "threads", "eager" or "graph"
  int n_envs = 0, warmup = 0, steps = 0;
  double seconds = 0;                 ///< the timed steps, by the clock named in throughput_clock
  double throughput = 0;              ///< env-steps per second delivered over the timed steps
  std::string throughput_clock;       ///< "cuda events" or "host steady clock"
  double fps = 0;                     ///< the FPS tracker's smoothed value at the end (NaN: none)
  Json fps_line;                      ///< the FPS line as every run record writes it (fps_json)
  std::vector<StageRow> host_warmup;  ///< graph mode: the warm-up and capture steps
  std::vector<StageRow> host;         ///< the timed steps
  std::vector<StageRow> device;       ///< on the GPU's clock (device_record_rows); empty: none
  std::uint64_t device_joined = 0, device_untimed = 0;
  int device_sample_every = 0;
  std::optional<GraphCacheRecord> graph_cache;
  std::optional<PacerRecord> pacer;
  std::optional<MemoryRecord> memory;
};

struct SweepRow {
  int n_envs = 0;
  double eager_us = 0, graph_us = 0;
};

/// --json FILE. The file is opened when this is made, so a missing directory or an unwritable path
/// fails before a long run: std::runtime_error naming the path and the reason.
class JsonReport {
 public:
  JsonReport(const std::string& path, const Args& args, int argc, char** argv);
  ~JsonReport();
  JsonReport(const JsonReport&) = delete;
  JsonReport& operator=(const JsonReport&) = delete;

  void set_gpu(const GpuInfo& gpu) { gpu_ = gpu; }
  void add(const RunRecord& run) { runs_.push_back(run); }
  void add_sweep(const SweepRow& row) { sweep_.push_back(row); }
  /// Writes everything added, once, at the end of the runs. Throws std::runtime_error when the
  /// write fails.
  void write();

 private:
  JsonFile file_;
  std::string command_;
  Args args_;
  std::optional<GpuInfo> gpu_;
  std::vector<RunRecord> runs_;
  std::vector<SweepRow> sweep_;
};

}  // namespace simprof::examples
