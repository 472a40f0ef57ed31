// SPDX-License-Identifier: MIT
// What simprof costs an engine's loop: blocks of steps with simprof on and off, interleaved in one
// process, beside a null pair (off against off) that says how much the machine and the engine's
// own variation alone move a block.
// Shared by the engine examples' --cost.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace simprof::examples {

/// One timed run of the loop: its wall-clock and process CPU seconds.
struct CostRun {
  double wall_s = 0;
  double cpu_s = 0;
};

/// Process CPU seconds so far (CLOCK_PROCESS_CPUTIME_ID: every thread, blind to time not run).
double process_cpu_seconds();

/// Runs `block` once and returns its wall-clock and process CPU seconds.
template <class Block>
CostRun time_run(Block&& block) {
  const double c0 = process_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  block();
  return CostRun{std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                 process_cpu_seconds() - c0};
}

/// The figures of one measurement. Costs are per cent of the off run's time (positive: slower).
struct OnOffCost {
  double on_wall_s = 0, off_wall_s = 0;  // medians over the rounds
  double cost_pct = 0;  // median over rounds of on / its neighbours' wall time, - 1
  double null_pct = 0;  // the same for off': the method's spread on this machine and engine
  double best_pct = 0;  // fastest on over fastest off, - 1 (preemption only slows a run)
  double cpu_pct = 0;   // median over rounds of on/off process CPU time, - 1
  /// The null within half the target: the cost is measured, not the machine.
  bool resolved(double target_pct) const noexcept;
  /// "within 1 %", "OVER 1 %" or "not resolved: the null pair differs by +1.23 %, over half of
  /// 1 %".
  std::string verdict(double target_pct) const;
  /// One line of figures (the null pair and the load-robust views), starting with `indent`.
  std::string details(const std::string& indent) const;
};

/// `rounds` rounds of four runs of the same loop, on, off, off', off, after one off run: each on
/// run is read against the mean of the off runs either side of it, so that an engine whose work
/// per step moves over a run (a pile falling, then settling) favours neither side; each off' run,
/// the null pair, is read the same way. `run(on)` runs and times one block of steps.
OnOffCost measure_on_off(int rounds, const std::function<CostRun(bool on)>& run);

/// The median of v (v's mean of the two middle values for an even count; 0 for none).
double median(std::vector<double> v);

}  // namespace simprof::examples
