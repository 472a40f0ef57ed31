// SPDX-License-Identifier: MIT
#include "node_stamps.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace simprof::cuda::detail {

bool ReplayStamps::complete() const noexcept {
  return std::all_of(t, t + slots, [](unsigned long long v) { return v != 0; });
}

unsigned long long ReplayStamps::span() const noexcept {
  return *std::max_element(t, t + slots) - t[kBeginSlot];
}

unsigned long long ReplayStamps::start(const std::vector<std::uint32_t>& starts) const noexcept {
  unsigned long long s = 0;
  for (const std::uint32_t i : starts) s = std::max(s, t[i]);
  return s;
}

double ReplayStamps::seconds(std::size_t node,
                             const std::vector<std::uint32_t>& starts) const noexcept {
  const double ns = static_cast<double>(end(node)) - static_cast<double>(start(starts)) -
                    static_cast<double>(hop());
  return std::max(0.0, ns * 1e-9);
}

std::vector<std::uint32_t> start_slots(const GraphShape& g, std::uint32_t node) {
  std::vector<std::uint32_t> starts;
  std::vector<std::uint32_t> walk{node};
  std::unordered_set<std::uint32_t> seen;  // the nodes this walk reached (not the whole graph)
  while (!walk.empty()) {
    const std::uint32_t w = walk.back();
    walk.pop_back();
    if (g.deps[w].empty()) starts.push_back(kHopSlot);  // a root (or an empty one)
    for (const std::uint32_t d : g.deps[w]) {
      if (!seen.insert(d).second) continue;
      if (g.slot[d] != kNoSlot)
        starts.push_back(g.slot[d]);
      else
        walk.push_back(d);  // an empty node: its own dependencies
    }
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  return starts;
}

std::optional<std::size_t> SlotRanges::find(std::size_t need) const noexcept {
  for (const auto& [offset, size] : free_)
    if (size >= need) return offset;
  if (used_ + need > capacity_) return std::nullopt;
  return used_;
}

void SlotRanges::take(std::size_t offset, std::size_t need) {
  for (auto it = free_.begin(); it != free_.end(); ++it)
    if (it->first == offset && it->second >= need) {
      it->first += need;
      it->second -= need;
      if (it->second == 0) free_.erase(it);
      return;
    }
  used_ += need;
}

ClockMap::ClockMap(const ClockPoint& from, const ClockPoint& to) noexcept
    : a_(from.ok ? from : to) {
  const ClockPoint& b = to.ok ? to : from;
  if (a_.ok && b.ok && b.device_ns != a_.device_ns)
    rate_ = static_cast<double>(b.host_ns - a_.host_ns) /
            static_cast<double>(b.device_ns - a_.device_ns);
}

std::int64_t ClockMap::to_host(unsigned long long device_ns) const noexcept {
  const double d = static_cast<double>(static_cast<std::int64_t>(device_ns) - a_.device_ns);
  return a_.host_ns + static_cast<std::int64_t>(std::llround(d * rate_));
}

}  // namespace simprof::cuda::detail
