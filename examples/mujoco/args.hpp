// SPDX-License-Identifier: MIT
// The MuJoCo example's command line.
#pragma once

#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <mujoco/mujoco.h>
#include "on_off_cost.hpp"
#include "run_json.hpp"

#include "cli.hpp"
#include "simprof/simprof.hpp"

namespace simprof::examples::mujoco {

inline const char* const kUsage =
    "usage: mujoco_example [--model PATH] [--n-envs N] [--threads T] [--steps N]\n"
    "                      [--ctrl-noise X] [--seed S] [--trace DIR] [--json FILE] [--quiet]\n"
    "                      [--compare-testspeed] [--compare-runs N] [--testspeed PATH]\n"
    "                      [--cost] [--cost-rounds N] [--cost-steps N]\n"
    "  --model PATH          MJCF model (default /usr/share/mujoco/model/humanoid/humanoid.xml)\n"
    "  --n-envs N            environments, one mjData each (default 8; 1 with "
    "--compare-testspeed)\n"
    "  --threads T           threads stepping them, the loop's thread included (default 1)\n"
    "  --steps N             steps of every environment (default 1000; 5000 with "
    "--compare-testspeed)\n"
    "  --ctrl-noise X        control noise in [0, 1], as mujoco-testspeed's (default 0.01)\n"
    "  --seed S              env e's noise starts at Halton index (S * n_envs + e) * 100003\n"
    "                        (env 0 of seed 0: mujoco-testspeed's own sequence)\n"
    "  --trace DIR           a Chrome/Perfetto trace of 3 steps in the middle, under DIR\n"
    "  --json FILE           the run as JSON\n"
    "  --compare-testspeed   also run mujoco-testspeed on the same model and settings, in turn\n"
    "                        with this example's runs, and compare steps/s and its phase table\n"
    "                        (1 env, 1 thread; medians)\n"
    "  --compare-runs N      runs of this example (N + 1 of testspeed) to take medians of (3)\n"
    "  --cost                steps/s with simprof on vs off, interleaved, at 1 and T threads\n";

struct Args {
  std::string model = "/usr/share/mujoco/model/humanoid/humanoid.xml";
  int n_envs = -1;  // -1: the default (8, or 1 with --compare-testspeed)
  int threads = -1;
  int steps = -1;
  double ctrl_noise = 0.01;
  int seed = 0;
  std::string trace;
  std::string json;
  std::string command;  // as typed: the --json file's provenance
  bool quiet = false;
  bool compare_testspeed = false;
  std::string testspeed = "/usr/bin/mujoco-testspeed";
  int compare_runs = 3;
  bool cost = false;
  int cost_rounds = 21;
  int cost_steps = 100;
};

inline Args parse_args(int argc, char** argv) {
  Args a;
  simprof::cli::Flags(kUsage)
      .text("--model", a.model)
      .integer("--n-envs", a.n_envs, 1)
      .integer("--threads", a.threads, 1, 512)
      .integer("--steps", a.steps, 1)
      .real("--ctrl-noise", a.ctrl_noise, 0.0, 1.0)
      .integer("--seed", a.seed, 0)
      .text("--trace", a.trace)
      .text("--json", a.json)
      .flag("--quiet", a.quiet)
      .flag("--compare-testspeed", a.compare_testspeed)
      .text("--testspeed", a.testspeed)
      .integer("--compare-runs", a.compare_runs, 1)
      .flag("--cost", a.cost)
      .integer("--cost-rounds", a.cost_rounds, 1)
      .integer("--cost-steps", a.cost_steps, 1)
      .parse(argc, argv);
  a.command = simprof::examples::command_line(argc, argv);
  if (a.compare_testspeed) {
    if (a.n_envs > 1 || a.threads > 1)
      throw std::invalid_argument(fmt::format(
          "--compare-testspeed runs 1 env on 1 thread, as mujoco-testspeed does (got --n-envs {} "
          "--threads {})",
          a.n_envs, a.threads));
    if (a.cost) throw std::invalid_argument("--compare-testspeed and --cost are separate runs");
    a.n_envs = 1;
    a.threads = 1;
    if (a.steps < 0) a.steps = 5000;
  }
  if (a.n_envs < 0) a.n_envs = 8;
  if (a.threads < 0) a.threads = 1;
  if (a.steps < 0) a.steps = 1000;
  if (a.threads > a.n_envs)
    throw std::invalid_argument(fmt::format(
        "--threads {}: more threads than environments (--n-envs {})", a.threads, a.n_envs));
  return a;
}

}  // namespace simprof::examples::mujoco
