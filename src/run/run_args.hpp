// SPDX-License-Identifier: MIT
// `simprof run`'s command line, parsed and validated (every refusal names the value and what was
// expected). Private to src/run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device_table.hpp"

namespace simprof::run {

struct RunArgs {
  std::string step;                             // --step NAME
  std::int64_t n_envs = 0;                      // --n-envs N
  std::string json;                             // --json FILE: the run record
  std::int64_t trace_from = -1, trace_to = -1;  // --trace-steps A:B: steps A .. B-1 traced
  std::string trace_dir = ".";                  // --trace-dir DIR
  bool fps = true;                              // --no-fps: no FPS line
  int gpu = -1;                                 // --gpu 1, --no-gpu 0, neither -1 (auto)
  std::int64_t gpu_every = 0;                   // --gpu-every N: 2 sampled steps in every N (0: 64)
  std::int64_t gpu_interval_ms = -1;            // --gpu-interval MS: a window at most (-1: 100)
  // --gpu-launches auto|hook|cupti: how the launches are seen (auto: the hook, else CUPTI)
  cuda::LaunchSource launches = cuda::LaunchSource::kAuto;
  bool launches_set = false;  // --gpu-launches was given
  bool help = false;          // -h / --help: `error` holds the usage
  std::vector<std::string> command;
};

extern const char* const kRunUsage;

// The signal the command sends its tool for the report so far, when simprof itself gets SIGUSR1:
// a real-time one, so that the program's own SIGUSR1 stays the program's.
int report_signal() noexcept;

// The command as a shell would take it back: each argument quoted where it needs to be.
std::string shell_line(const std::vector<std::string>& command);

// `text` as a whole number in [least, most] (nothing after it); false, `out` untouched, otherwise.
// The one reading of numbers for the command line and the environment the tool reads.
bool parse_whole(const std::string& text, long long least, long long most, long long& out);

// False with `error` set (the usage for --help, with a.help) when the line is not a run.
bool parse_run_args(int argc, const char* const* argv, RunArgs& a, std::string& error);

}  // namespace simprof::run
