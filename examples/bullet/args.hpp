// SPDX-License-Identifier: MIT
// The bullet example's command line.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli.hpp"

namespace simprof::examples::bullet {

struct Args {
  int n_envs = 4;
  int threads = 1;
  int steps = 300;
  int bodies = 200;
  int warmup = 30;
  int attempts = 1;
  bool cost = false;
  bool quiet = false;
  std::string trace;    // directory
  std::string json;     // file
  std::string command;  // as typed: the --json file's provenance
};

const char* const kUsage =
    "usage: bullet [--n-envs N] [--threads T] [--steps N] [--bodies N] [--warmup N]\n"
    "              [--attempts N] [--trace DIR] [--json FILE] [--cost] [--quiet]\n"
    "  --n-envs N   Bullet worlds (btDiscreteDynamicsWorld), each a pile on a plane (default 4)\n"
    "  --threads T  threads stepping them; 1: the loop's own thread (default 1)\n"
    "  --steps N    timed steps (default 300); with --cost, all blocks (5 steps each: on, off,\n"
    "               off', off, ...) at 1 thread; at T threads as many rounds as take the same\n"
    "               time (at most 16 times as many)\n"
    "  --bodies N   spheres and boxes per world (default 200)\n"
    "  --warmup N   steps before timing: the piles collapse (default 30)\n"
    "  --attempts N measure again, up to N times in all, while a zone disagrees with the\n"
    "               reference (a loaded machine may preempt a thread between the two clock\n"
    "               reads of one callback: a whole time slice on one side) (default 1)\n"
    "  --trace DIR  a Chrome/Perfetto trace of 3 steps from the middle of the run\n"
    "  --json FILE  the run as JSON\n"
    "  --cost       steps/s with simprof's hooks on vs off, interleaved, at 1 and T threads\n"
    "  --quiet      no FPS lines\n";

inline Args parse_args(int argc, char** argv) {
  Args a;
  cli::Flags(kUsage)
      .integer("--n-envs", a.n_envs, 1)
      .integer("--threads", a.threads, 1, 64)
      .integer("--steps", a.steps, 1)
      .integer("--bodies", a.bodies, 1, 100000)
      .integer("--warmup", a.warmup, 0)
      .integer("--attempts", a.attempts, 1, 10)
      .text("--trace", a.trace)
      .text("--json", a.json)
      .flag("--cost", a.cost)
      .flag("--quiet", a.quiet)
      .parse(argc, argv);
  a.command = command_line(argc, argv);
  if (a.cost && (!a.trace.empty() || !a.json.empty()))
    throw std::invalid_argument("--cost times the hooks alone: leave out --trace and --json");
  return a;
}

}  // namespace simprof::examples::bullet
