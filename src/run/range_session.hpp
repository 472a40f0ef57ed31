// SPDX-License-Identifier: MIT
// The process's `simprof run` session inside the program: one StepProfiler fed by the program's
// NVTX ranges (RangeSteps), its FPS line as the library prints it, and the report at exit and on
// SIGUSR1. Made at NVTX's first call into the tool, never destroyed (NVTX may call until exit);
// its report is written once, at exit. Private to src/run.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "range_device.hpp"
#include "range_spans.hpp"
#include "range_steps.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/trace/session.hpp"

namespace simprof::run {

// What the session reads from the environment `simprof run` sets (each validated).
struct RunConfig {
  std::string step;         // SIMPROF_RUN_STEP: the step's range name ("": the outermost repeating)
  std::int64_t n_envs = 0;  // SIMPROF_RUN_N_ENVS: for the per-env rate
  std::string mark;         // SIMPROF_RUN_MARK: a file written when the session starts
  // Another process of the same run took the run's record first (SIMPROF_RUN_MARK.first): this
  // one's record, trace and report are its own, named by its pid ("" in the first).
  std::string process;
  std::string json;          // SIMPROF_RUN_JSON: the run record's path ("": none)
  std::string command;       // SIMPROF_RUN_COMMAND: the command line, for the record
  int json_every_ms = 1000;  // SIMPROF_RUN_JSON_EVERY_MS: snapshots of the record while it runs
  // SIMPROF_RUN_TRACE_FROM / _TO / _DIR: a trace of steps [from, to) (to 0: none), under dir.
  std::int64_t trace_from = 0, trace_to = 0;
  std::string trace_dir = ".";
  GpuMode gpu = GpuMode::kAuto;  // SIMPROF_RUN_GPU: auto (unset), 1 or 0
  // SIMPROF_RUN_GPU_EVERY, SIMPROF_RUN_GPU_INTERVAL_MS: a window of 2 steps in every N, at most
  // one in the interval; SIMPROF_RUN_GPU_LAUNCHES: auto (the default), hook or cupti.
  Sampling gpu_sampling;
  static RunConfig from_env();
};

// `path` for another process of the run: "run.json" -> "run.pid42.json", "dir" -> "dir/pid42".
std::string process_path(const std::string& path, const std::string& process, bool directory);

class RangeSession {
 public:
  static RangeSession& get();  // made at the first call

  // A range pushed / popped in NVTX domain `domain` (0: the default one): the depth on its thread
  // and domain before the push (after the pop), as NVTX returns them.
  int push(std::string_view name, std::uint64_t domain = 0);
  int pop(std::uint64_t domain = 0);
  // A start/end range: opened on this thread (its id), closed by end() from any thread.
  std::uint64_t start(std::string_view name, std::uint64_t domain = 0);
  void end(std::uint64_t id);
  // A stable copy of `s` (registered strings, domains).
  const char* intern(std::string_view s);
  // The report: the step range, the stage table, what was seen and what went wrong.
  std::string report(bool final = false);
  void finish();  // at exit: the step in progress dropped, the report and the record written
  // The record now (under the lock), written atomically outside it; errors said once.
  void write_record(bool final);

 private:
  RangeSession();
  std::mutex mu_;
  RunConfig config_;
  StepProfiler prof_;
  RangeSteps steps_;
  std::unique_ptr<TraceSession> trace_;  // --trace-steps: the window's CPU spans (the ranges)
  RangeSpans other_ranges_;              // ... and the ranges that are no stage, on their threads
  SourceRegistration other_joined_;
  std::unique_ptr<RangeDevice> device_;  // --gpu: the device clock's figures
  std::set<std::string, std::less<>> interned_;
  bool said_step_ = false;
  void start_trace();  // --trace-steps: a session counting from now
  // `out` with each "simprof run:" naming this process, when it is not the run's first.
  std::string tagged(std::string out) const;
  bool finished_ = false;
  std::mutex write_mu_;  // one record write at a time (snapshots and the final one)
  bool said_write_error_ = false;
  std::uint64_t written_steps_ = ~std::uint64_t{0};
  std::atomic<bool> forked_{false};        // a copy made by fork(): see get()
  std::atomic<std::uint64_t> started_{0};  // start/end ranges started (ids: the thread above)
  void open(std::uint64_t thread, std::string_view name, std::uint64_t domain, std::uint64_t id);
};

}  // namespace simprof::run
