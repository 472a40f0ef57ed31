// SPDX-License-Identifier: MIT
// DeviceStageTimer's arithmetic, on the host and without CUDA: one step's stamps (a replayed
// graph's, the eager ones, and the boundaries merged into those) to its stages' device times.
// Private to src/cuda/timing; tested without a GPU (tests/cuda/test_stamp_math.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "simprof/profiler/step_profiler.hpp"
#include "simprof/profiler/timings.hpp"

namespace simprof::cuda::detail {

enum StampKind : int { kStageBegin = 1, kStageEnd = 2 };

/// A graph stamp's entry: the boundary it marks, and when the GPU reached it (ns).
struct StampEntry {
  std::int32_t stage;
  std::int32_t kind;
  unsigned long long t;
};

/// What an eager stamp marks (its time is the step record's `eager` at the same place).
struct StageMark {
  int stage = 0;
  int kind = 0;
};

/// An eager boundary that took an earlier eager stamp's instant (merge_within_ns).
struct MergedMark {
  unsigned source = 0;  // that stamp's place among the step's eager stamps, from 1
  int stage = 0;
  int kind = 0;
};

/// One step's stamps as read back, and what an eager stamp costs the stages around it.
struct StepStamps {
  const StampEntry* graph = nullptr;
  unsigned n_graph = 0;
  const unsigned long long* eager = nullptr;  // times, in stream order
  const StageMark* marks = nullptr;           // what each marks
  unsigned n_eager = 0;
  const MergedMark* merged = nullptr;
  unsigned n_merged = 0;
  double eager_ns = 0;  // taken off a stage for each eager stamp inside it
};

class StageWalk {
 public:
  /// Reserves room for `most` stamps and merged boundaries: sorting them allocates nothing; the
  /// per-stage state grows with the number of stages only.
  explicit StageWalk(std::size_t most);

  /// Adds each stage's device seconds of the step to `out` (reset for prof.num_stages()): a begin
  /// opens its stage, its end closes it, the eager stamps inside are taken out, and a child counts
  /// into each parent not open around it, as on the host. The stages whose stamps did not pair up
  /// in time order are unpaired() after.
  void walk(const StepStamps& s, const StepProfiler& prof, TimingsSnapshot& out);
  const std::vector<StageId>& unpaired() const noexcept { return unpaired_; }

 private:
  enum class Source : std::uint8_t { kGraph, kEager };
  // A stamp in time order. At the same instant a graph's entries come first (in reserved order),
  // then the eager stamps (in stream order), each followed by the boundaries merged into it.
  struct Item {
    unsigned long long t = 0;
    Source source = Source::kGraph;
    unsigned place = 0;  // the graph entry's index, or the eager stamp's place (a merged one: its
                         // stamp's)
    unsigned sub = 0;    // 0 for the stamp itself, k + 1 for the k-th merged boundary
    int stage = 0;
    int kind = 0;
  };
  enum class OpenState : std::uint8_t { kClosed, kOpen, kEndFirst /* its end came first */ };
  struct Open {
    std::int64_t at = 0;  // its begin stamp's time
    unsigned eager = 0;   // the step's eager stamps before its begin's (in time order)
    OpenState state = OpenState::kClosed;
  };
  void sort(const StepStamps& s);

  std::vector<Item> items_;
  std::vector<Open> open_;  // by stage
  std::vector<StageId> unpaired_;
};

}  // namespace simprof::cuda::detail
