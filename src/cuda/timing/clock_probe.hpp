// SPDX-License-Identifier: MIT
// The GPU's global timer read against a timebase at one instant: a ping-pong kernel on a stream of
// its own (the greatest priority) and a page-locked box both sides read and write. A trace
// window's device spans are placed through two such points (ClockMap). Private to src/cuda/timing.
#pragma once

#include <cstdint>

#include "node_stamps.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/trace/time_base.hpp"

namespace simprof::cuda::detail {

class ClockProbe {
 public:
  static constexpr int kRounds = 16;

  /// On the current device.
  ClockProbe();
  /// The host writes "go", the probe kernel stamps the global timer and answers; each round's
  /// midpoint on the host against the stamp, the round with the shortest round trip kept. The first
  /// round waits up to 20 ms for the probe to find room on the GPU, later ones 1 ms; a probe that
  /// never answers is told to quit by the next one's generation. Not ok when it did not answer or
  /// a CUDA call failed.
  ClockPoint probe(const TimeBase& time_base) noexcept;

 private:
  Stream stream_;
  PinnedBuffer<unsigned long long> box_;
  std::uint64_t gen_ = 0;
};

}  // namespace simprof::cuda::detail
