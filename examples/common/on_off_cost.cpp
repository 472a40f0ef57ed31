// SPDX-License-Identifier: MIT
#include "on_off_cost.hpp"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace simprof::examples {

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool OnOffCost::resolved(double target_pct) const noexcept {
  return std::abs(null_pct) <= target_pct / 2;
}

std::string OnOffCost::verdict(double target_pct) const {
  if (!resolved(target_pct))
    return fmt::format("not resolved: the null pair differs by {:+.2f} %, over half of {:g} %",
                       null_pct, target_pct);
  return fmt::format("{} {:g} %", cost_pct <= target_pct ? "within" : "OVER", target_pct);
}

std::string OnOffCost::details(const std::string& indent) const {
  return fmt::format(
      "{}null pair (off vs off) {:+.2f} %; load-robust views: fastest on / fastest off {:+.2f} %, "
      "median process CPU time on/off {:+.2f} %\n",
      indent, null_pct, best_pct, cpu_pct);
}

OnOffCost measure_on_off(int rounds, const std::function<CostRun(bool on)>& run) {
  if (rounds < 1)
    throw std::invalid_argument(fmt::format("measure_on_off: {} rounds (expected >= 1)", rounds));
  std::vector<double> ratio, null, cpu, on_s, off_s;
  double best_on = 0, best_off = 0;
  // off | on | off | off' | off | on | off | off' | off ...: each middle run against the mean of
  // the off runs either side, so that an engine whose steps drift over the run (a pile settling)
  // favours neither side; off' is an off run in the place of an on run (the null pair).
  CostRun before = run(false);
  for (int r = 0; r < rounds; ++r) {
    const CostRun on = run(true);
    const CostRun after = run(false);
    const double off_wall = 0.5 * (before.wall_s + after.wall_s);
    ratio.push_back(on.wall_s / off_wall);
    cpu.push_back(on.cpu_s / (0.5 * (before.cpu_s + after.cpu_s)));
    on_s.push_back(on.wall_s);
    off_s.push_back(off_wall);
    best_on = r == 0 ? on.wall_s : std::min(best_on, on.wall_s);
    best_off = r == 0 ? after.wall_s : std::min(best_off, after.wall_s);  // one per on run
    const CostRun again = run(false);
    before = run(false);
    null.push_back(again.wall_s / (0.5 * (after.wall_s + before.wall_s)));
  }
  OnOffCost c;
  c.on_wall_s = median(on_s);
  c.off_wall_s = median(off_s);
  c.cost_pct = 100 * (median(ratio) - 1);
  c.null_pct = 100 * (median(null) - 1);
  c.best_pct = 100 * (best_on / best_off - 1);
  c.cpu_pct = 100 * (median(cpu) - 1);
  return c;
}

}  // namespace simprof::examples
