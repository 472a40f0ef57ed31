// SPDX-License-Identifier: MIT
#include "stamp_cost.hpp"

#include <cmath>
#include <map>
#include <mutex>

namespace simprof::cuda {

namespace {

// The process's measured costs: made at first use, kept until exit.
struct Costs {
  std::mutex mu;
  std::map<int, StampCost> by_device;
  StampCost& of(int device) {
    StampCost& c = by_device[device];
    c.device = device;
    return c;
  }
};

Costs& costs() {
  static Costs c;
  return c;
}

}  // namespace

StampCost stamp_cost(int device) {
  Costs& c = costs();
  const std::lock_guard<std::mutex> lock(c.mu);
  return c.of(device);
}

namespace detail {

double measured_once(int device, double StampCost::*what, const std::function<double()>& measure) {
  Costs& c = costs();
  const std::lock_guard<std::mutex> lock(c.mu);
  StampCost& s = c.of(device);
  if (std::isnan(s.*what)) s.*what = measure();
  return s.*what;
}

void set_dependent_launch(int device, bool dependent) noexcept {
  Costs& c = costs();
  const std::lock_guard<std::mutex> lock(c.mu);
  try {
    c.of(device).dependent_launch = dependent;
  } catch (...) {  // out of memory: the flag is only reported
  }
}

}  // namespace detail

}  // namespace simprof::cuda
