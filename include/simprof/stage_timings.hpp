// SPDX-License-Identifier: MIT
// StageTimings: the published breakdown of the latest step, stage name -> seconds (Genesis's
// scene.timings). Owned by a StepProfiler and rewritten in place at every step end, so reading it
// allocates nothing.
//
//   const simprof::StageTimings& t = prof.timings();
//   if (auto p = t.find("physics")) fmt::print("physics {:.1f} us\n", *p * 1e6);
//   t.for_each([](std::string_view name, double s) { fmt::print("{} {}\n", name, s); });
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace simprof {

/// Dense index of a stage inside one StepProfiler (see StepProfiler::stage_id()).
using StageId = std::uint32_t;
inline constexpr StageId kNoStage = ~StageId{0};
/// The whole step call, pre-step callbacks included.
inline constexpr StageId kStepStage = 0;
/// From the previous step's start to this one's: its inverse is the real loop rate.
inline constexpr StageId kPeriodStage = 1;

class StepProfiler;

class StageTimings {
 public:
  /// True until the first step ends, and after a vetoed step.
  bool empty() const noexcept;
  /// Number of stages present (counts them: O(stages)).
  std::size_t size() const noexcept;

  bool contains(std::string_view stage) const noexcept { return find(stage).has_value(); }
  bool contains(StageId id) const noexcept;
  /// Seconds of `stage` in the latest step (mean over the timings window), or nullopt when it did
  /// not run (or is unknown).
  std::optional<double> find(std::string_view stage) const noexcept;
  std::optional<double> find(StageId id) const noexcept;
  /// Like find(), but throws std::out_of_range naming the stage and the stages that are present.
  double at(std::string_view stage) const;
  double at(StageId id) const;

  /// Calls f(std::string_view name, double seconds) for each present stage, in registration order
  /// ("step" and "period" first).
  template <class F>
  void for_each(F&& f) const {
    for (StageId i = 0; i < count(); ++i)
      if (const auto v = find(i)) f(name(i), *v);
  }
  /// A copy as an ordinary map (allocates).
  std::map<std::string, double, std::less<>> to_map() const;

 private:
  friend class StepProfiler;
  explicit StageTimings(const StepProfiler* owner) : owner_(owner) {}
  std::string_view name(StageId id) const noexcept;
  StageId count() const noexcept;

  const StepProfiler* owner_;
};

}  // namespace simprof
