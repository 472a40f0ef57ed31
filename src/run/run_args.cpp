// SPDX-License-Identifier: MIT
#include "run_args.hpp"

#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <limits>

namespace simprof::run {

const char* const kRunUsage =
    "usage: simprof run [--step NAME] [--n-envs N] [--json FILE] [--trace-steps A:B] "
    "[--trace-dir DIR] [--gpu | --no-gpu] [--gpu-every N] [--gpu-interval MS] "
    "[--gpu-launches auto|hook|cupti] [--no-fps] -- "
    "COMMAND [ARGS...]\n"
    "  Runs COMMAND with simprof's NVTX tool: its NVTX ranges become steps and stages.\n"
    "  --step NAME  the range that is one step (default: the outermost range that repeats)\n"
    "  --n-envs N   environments per step, for the FPS line's per-env rate\n"
    "  --json FILE  the run record (schema simprof.run/2: simprof compare reads it), written at\n"
    "               exit and every second\n"
    "  --trace-steps A:B  a Kineto/Perfetto trace of steps A to B-1 (counted from 0), the ranges\n"
    "               as CPU spans, in DIR/simprof_trace_0/rank0.json (--trace-dir DIR, default .)\n"
    "  --gpu        device times (default where the program starts CUDA): the kernels launched\n"
    "               in each range on the GPU's clock, and the FPS line from them\n"
    "  --no-gpu     host times only\n"
    "  --gpu-every N  the device times' sampling: 2 consecutive steps in every N (default 64)\n"
    "  --gpu-interval MS  ... and at most one such window in MS milliseconds (default 100; 0: no\n"
    "               bound)\n"
    "  --gpu-launches auto|hook|cupti  how the launches are seen: simprof's launch hook,\n"
    "               preloaded into the program (no CUPTI), or CUPTI's callbacks; auto (default):\n"
    "               the hook where it sees the program's launches, else CUPTI\n"
    "  --no-fps     no FPS line while it runs (the stage table is still printed at exit)\n"
    "  The stage table is printed at exit, and on SIGUSR1 (kill -USR1 <simprof's pid>). The\n"
    "  program's exit status is passed on. Another process of the program that makes NVTX calls\n"
    "  is profiled on its own (FILE.pidN.json). SIMPROF_RUN_JSON_EVERY_MS: the record's snapshots.";

int report_signal() noexcept { return SIGRTMAX - 3; }

// The command as a shell would take it back: each argument quoted where it needs to be.
std::string shell_line(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) {
    const bool plain = !s.empty() && s.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
                                         "OPQRSTUVWXYZ0123456789_-./=:,+@%") == std::string::npos;
    std::string q = "'";
    for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += (out.empty() ? "" : " ") + (plain ? s : q + "'");
  }
  return out;
}

bool parse_whole(const std::string& text, long long least, long long most, long long& out) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != 0 || v < least || v > most) return false;
  out = v;
  return true;
}

namespace {
constexpr long long kMost = std::numeric_limits<long long>::max();

// "A:B" with 0 <= A < B.
bool parse_steps(const std::string& v, RunArgs& a, std::string& error) {
  const auto colon = v.find(':');
  long long from = -1, to = -1;
  if (colon == std::string::npos || !parse_whole(v.substr(0, colon), 0, kMost, from) ||
      !parse_whole(v.substr(colon + 1), 0, kMost, to) || to <= from) {
    error = "simprof run: --trace-steps '" + v + "' (expected A:B, whole numbers, 0 <= A < B)";
    return false;
  }
  a.trace_from = from;
  a.trace_to = to;
  return true;
}
// An option with its value: --trace-steps, the numbers, the texts (--step, --json, --trace-dir).
bool parse_value(const std::string& arg, const std::string& v, RunArgs& a, std::string& error) {
  if (arg == "--trace-steps") return parse_steps(v, a, error);
  if (arg == "--gpu-interval") {
    long long ms = 0;
    if (!parse_whole(v, 0, 3'600'000, ms)) {
      error = "simprof run: --gpu-interval '" + v +
              "' (expected milliseconds, a whole number from 0 to 3600000)";
      return false;
    }
    a.gpu_interval_ms = ms;
    return true;
  }
  if (arg == "--gpu-launches") {
    if (!parse_launches(v, a.launches)) {
      error = "simprof run: --gpu-launches '" + v + "' (expected auto, hook or cupti)";
      return false;
    }
    a.launches_set = true;
    return true;
  }
  if (arg == "--n-envs" || arg == "--gpu-every") {
    const bool envs = arg == "--n-envs";
    long long n = 0;
    if (!parse_whole(v, envs ? 0 : 2, envs ? kMost : 1'000'000'000, n)) {
      error = "simprof run: " + arg + " '" + v +
              (envs ? "' (expected a whole number >= 0)"
                    : "' (expected a whole number from 2 to 1000000000)");
      return false;
    }
    (envs ? a.n_envs : a.gpu_every) = n;
    return true;
  }
  const bool step = arg == "--step", json = arg == "--json";
  if (v.empty()) {
    error = "simprof run: " + arg + " '' (expected " +
            (step   ? "a range name)"
             : json ? "a file to write)"
                    : "a directory)");
    return false;
  }
  (step ? a.step : json ? a.json : a.trace_dir) = v;
  return true;
}

}  // namespace

bool parse_run_args(int argc, const char* const* argv, RunArgs& a, std::string& error) {
  if (argc < 2 || std::string(argv[1]) != "run") {
    a.help = argc >= 2 && (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help");
    error = std::string(a.help     ? ""
                        : argc < 2 ? "simprof: expected a command (run or compare)\n"
                                   : "simprof: unknown command '" + std::string(argv[1]) +
                                         "' (expected run or compare)\n") +
            kRunUsage + "\n" + "       simprof compare BASE.json NEW.json (simprof compare --help)";
    return false;
  }
  int i = 2;
  for (; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help") {
      a.help = true;
      error = kRunUsage;
      return false;
    }
    if (arg == "--no-fps" || arg == "--gpu" || arg == "--no-gpu") {
      if (arg == "--no-fps") a.fps = false;
      if (arg != "--no-fps" && a.gpu == (arg == "--gpu" ? 0 : 1)) {
        error = "simprof run: --gpu and --no-gpu together (expected one of them)";
        return false;
      }
      if (arg != "--no-fps") a.gpu = arg == "--gpu" ? 1 : 0;
      continue;
    }
    if (arg != "--step" && arg != "--n-envs" && arg != "--json" && arg != "--trace-steps" &&
        arg != "--trace-dir" && arg != "--gpu-every" && arg != "--gpu-interval" &&
        arg != "--gpu-launches") {
      error = arg[0] == '-' ? "simprof run: unknown option '" + arg + "'\n" + kRunUsage
                            : "simprof run: '" + arg +
                                  "' is not an option: put the command after --\n" + kRunUsage;
      return false;
    }
    if (i + 1 >= argc) {
      error = "simprof run: " + arg + " needs a value";
      return false;
    }
    if (!parse_value(arg, argv[++i], a, error)) return false;
  }
  for (; i < argc; ++i) a.command.emplace_back(argv[i]);
  if (a.trace_dir != "." && a.trace_to < 0) {
    error = "simprof run: --trace-dir " + a.trace_dir + " needs --trace-steps A:B";
    return false;
  }
  if (a.gpu == 0 && (a.gpu_every != 0 || a.gpu_interval_ms >= 0 || a.launches_set)) {
    error = a.gpu_every != 0
                ? "simprof run: --gpu-every " + std::to_string(a.gpu_every) + " with --no-gpu"
            : a.launches_set ? std::string("simprof run: --gpu-launches with --no-gpu")
                             : "simprof run: --gpu-interval " + std::to_string(a.gpu_interval_ms) +
                                   " with --no-gpu";
    return false;
  }
  if (a.command.empty()) {
    error = std::string("simprof run: no command to run (put it after --)\n") + kRunUsage;
    return false;
  }
  return true;
}

}  // namespace simprof::run
