// SPDX-License-Identifier: MIT
// GraphKernelTimer's arithmetic, on the host and without CUDA: a replay's node stamps to its
// nodes' device times, and the GPU's global timer onto the trace's timebase. Private to
// src/cuda/timing; tested without a GPU (tests/cuda/test_stamp_math.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace simprof::cuda::detail {

// A copy's stamps, from its first slot: the begin stamp, the hop stamp right after it (what one
// stamp adds to a chain, in this replay), then one per node (node i at kFirstNode + i).
constexpr std::uint32_t kBeginSlot = 0, kHopSlot = 1, kFirstNode = 2;

/// One replay's stamps as read back: `slots` global-timer readings (ns; 0: the stamp did not run).
struct ReplayStamps {
  const unsigned long long* t = nullptr;
  std::size_t slots = 0;

  bool ran() const noexcept { return t[kBeginSlot] != 0; }
  /// Every stamp ran.
  bool complete() const noexcept;
  /// From the begin stamp to the last one (the replay's span, ns).
  unsigned long long span() const noexcept;
  unsigned long long hop() const noexcept { return t[kHopSlot] - t[kBeginSlot]; }
  /// A node's start: the latest of its dependencies' stamps (`starts`: their slots).
  unsigned long long start(const std::vector<std::uint32_t>& starts) const noexcept;
  unsigned long long end(std::size_t node) const noexcept { return t[kFirstNode + node]; }
  /// Node `node`'s device seconds: from its start to its own stamp, less this replay's hop (what
  /// its stamp added), never below 0.
  double seconds(std::size_t node, const std::vector<std::uint32_t>& starts) const noexcept;
};

/// A graph as plain indices, for the stamps' plan: each node's dependencies, and its stamp's slot
/// (kNoSlot: an empty node, which gets no stamp).
constexpr std::uint32_t kNoSlot = 0xffffffffu;
struct GraphShape {
  std::vector<std::vector<std::uint32_t>> deps;
  std::vector<std::uint32_t> slot;
};

/// The slots node `node`'s start comes from: its dependencies' stamps, looked through empty nodes
/// (a root, or an empty node without dependencies: the hop stamp, kHopSlot); sorted, each once.
std::vector<std::uint32_t> start_slots(const GraphShape& g, std::uint32_t node);

/// The row's slots the stamped copies hold. A copy takes the first retired range it fits in, else
/// the end of the row; a retired copy's range is free again (adjacent ranges are not merged).
class SlotRanges {
 public:
  explicit SlotRanges(std::size_t capacity) noexcept : capacity_(capacity) {}
  /// Where `need` slots would go; nullopt: no room.
  std::optional<std::size_t> find(std::size_t need) const noexcept;
  /// Takes `need` slots at `offset` (as find() said).
  void take(std::size_t offset, std::size_t need);
  /// A retired copy's slots (throws std::bad_alloc: they stay taken).
  void give_back(std::size_t offset, std::size_t size) { free_.emplace_back(offset, size); }
  /// The row's slots in use, free ranges included: what a sampled step zeroes and reads back.
  std::size_t used() const noexcept { return used_; }

 private:
  std::size_t capacity_;
  std::size_t used_ = 0;
  std::vector<std::pair<std::size_t, std::size_t>> free_;  // (offset, size)
};

/// The GPU's global timer against the timebase at one instant: the ping-pong round with the
/// shortest round trip (its midpoint on the host), and half that round trip (how far off it can
/// be).
struct ClockPoint {
  bool ok = false;
  std::int64_t device_ns = 0, host_ns = 0, error_ns = 0;
};

/// Device nanoseconds onto the timebase through two clock points (interpolated: the GPU's timer
/// and the host's clock may run at slightly different rates), or the one that is ok (at least one
/// must be).
class ClockMap {
 public:
  ClockMap(const ClockPoint& from, const ClockPoint& to) noexcept;
  std::int64_t to_host(unsigned long long device_ns) const noexcept;

 private:
  ClockPoint a_;
  double rate_ = 1.0;
};

}  // namespace simprof::cuda::detail
