// SPDX-License-Identifier: MIT
// mujoco-testspeed run beside the example, and the comparison of the two. Included by main.cpp
// only.
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

#include "batch.hpp"
#include "cli.hpp"
#include "simprof/simprof.hpp"

namespace simprof::examples::mujoco {

// --- mujoco-testspeed -------------------------------------------------------------------------
struct Testspeed {
  double steps_per_s = 0;
  std::vector<std::pair<std::string, double>> phase_ms;  // in its table's order
};

// Both sides of the testspeed comparison on one CPU: a process moved between CPUs (or started on
// a slower one) runs at another speed, and separate processes are compared here.
inline void pin_to_this_cpu() {
  const int cpu = sched_getcpu();
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu >= 0) CPU_SET(cpu, &set);
  if (cpu < 0 || sched_setaffinity(0, sizeof set, &set) != 0)
    fmt::print("mujoco_example: could not pin to one CPU ({}): the runs may move between CPUs\n",
               std::strerror(errno));
  else
    fmt::print("mujoco_example: this process and testspeed's runs pinned to CPU {}\n", cpu);
}

inline Testspeed run_testspeed(const Args& args) {
  const std::string cmd = fmt::format("'{}' '{}' {} 1 {} 1 2>&1", args.testspeed, args.model,
                                      args.steps, args.ctrl_noise);
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr)
    throw std::runtime_error(
        fmt::format("--testspeed {}: {}", args.testspeed, std::strerror(errno)));
  std::string out;
  std::array<char, 512> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), p)) out += buf.data();
  const int rc = pclose(p);
  Testspeed t;
  bool in_table = false;
  std::size_t pos = 0;
  while (pos < out.size()) {
    std::size_t nl = out.find('\n', pos);
    if (nl == std::string::npos) nl = out.size();
    const std::string line = out.substr(pos, nl - pos);
    pos = nl + 1;
    double v = 0;
    char name[64] = "";
    if (std::sscanf(line.c_str(), " Steps per second : %lf", &v) == 1) t.steps_per_s = v;
    if (line.find("Profiler phase") != std::string::npos)
      in_table = true;
    else if (in_table && std::sscanf(line.c_str(), " %63s : %lf", name, &v) == 2)
      t.phase_ms.emplace_back(name, v);
  }
  if (rc != 0 || t.steps_per_s <= 0 || t.phase_ms.empty())
    throw std::runtime_error(
        fmt::format("{} failed or printed no profile (exit {}):\n{}", cmd, rc, out));
  return t;
}

using simprof::examples::median;

// Medians over the testspeed runs and over this example's runs (taken in turn), compared.
inline bool compare_testspeed(const std::vector<Testspeed>& ts,
                              const std::vector<RunResult>& mine) {
  fmt::print(
      "\nsimprof vs mujoco-testspeed (1 env, 1 thread, same model, steps and ctrl noise): {} "
      "testspeed runs taken in turn with {} runs of this example, all on one CPU; diff: the median "
      "of each example run against the two testspeed runs around it (phases in ms per call, as "
      "testspeed prints them = simprof's mean over the steps that ran them); agreement: within "
      "5 % or 1 us\n",
      ts.size(), mine.size());
  fmt::print("  {:<18} {:>11} {:>23} {:>11} {:>10}  {}\n", "", "testspeed", "(min .. max)",
             "simprof", "paired diff", "verdict");
  // Example run k ran between testspeed runs k and k + 1: each is compared with the mean of the
  // two around it, and the median of those paired differences is the verdict's (a machine that
  // drifts, or switches between a fast and a slow state, moves both sides of a pair together).
  auto line = [](const std::string& name, const std::vector<double>& theirs,
                 const std::vector<double>& ours, bool rate) {
    const double t = median(theirs), o = median(ours);
    std::vector<double> paired;  // rate: ours / theirs; phases: ours - theirs, ms
    for (std::size_t k = 0; k < ours.size() && k + 1 < theirs.size(); ++k) {
      const double around = (theirs[k] + theirs[k + 1]) / 2;
      paired.push_back(rate ? ours[k] / around : ours[k] - around);
    }
    const double d = median(paired);
    const bool ok = rate ? agrees(1 / t, 1 / (t * d)) : agrees(t * 1e-3, (t + d) * 1e-3);
    const auto [lo, hi] = std::minmax_element(theirs.begin(), theirs.end());
    const std::string diff = rate ? fmt::format("{:+.2f} %", 100 * (d - 1)) : pct(t, t + d);
    fmt::print(rate ? "  {:<18} {:>11.0f} {:>10.0f} .. {:>10.0f} {:>11.0f} {:>10}  {}\n"
                    : "  {:<18} {:>11.5f} {:>10.5f} .. {:>10.5f} {:>11.5f} {:>10}  {}\n",
               name, t, *lo, *hi, o, diff, ok ? "ok" : "DIFFERS");
    return ok;
  };
  std::vector<double> theirs, ours;
  for (const auto& t : ts) theirs.push_back(t.steps_per_s);
  for (const auto& r : mine) ours.push_back(r.env_steps_per_s);
  bool ok = line("steps/s", theirs, ours, true);
  for (const auto& phase : ts.front().phase_ms) {
    theirs.clear();
    ours.clear();
    for (const auto& t : ts)
      for (const auto& [n, v] : t.phase_ms)
        if (n == phase.first) theirs.push_back(v);
    for (const auto& r : mine)
      for (const auto& l : r.phases)
        if (l.name == phase.first) ours.push_back(l.simprof_mean_ms);
    if (theirs.empty() || ours.empty()) continue;
    ok = line(phase.first + " ms", theirs, ours, false) && ok;
  }
  fmt::print("comparison with mujoco-testspeed: {}\n",
             ok ? "ok"
                : "DIFFERS (beyond 5 % and 1 us: separate processes timed in turn; rerun "
                  "on an idle machine, or with more --compare-runs)");
  return ok;
}

}  // namespace simprof::examples::mujoco
