// SPDX-License-Identifier: MIT
// Stage timings by name: StageTimings (the published breakdown of the latest step, Genesis's
// scene.timings) and TimingsSnapshot (a copied breakdown, e.g. device-side stage times). Both
// answer the same questions through TimingsView.
//
/* clang-format off */
//   const simprof::StageTimings& t = prof.timings();
//   if (auto p = t.find("physics")) fmt::print("physics {:.1f} us\n", *p * 1e6);
//   t.for_each([](std::string_view name, double s) { fmt::print("{} {}\n", name, s); });
/* clang-format on */
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "simprof/base/stage_id.hpp"

namespace simprof {

class StepProfiler;

namespace detail {
// Stage names of a profiler, for the views (defined in step_profiler.cpp).
StageId find_stage_of(const StepProfiler& prof, std::string_view name) noexcept;
std::string_view stage_name_of(const StepProfiler& prof, StageId id) noexcept;
StageId stage_count_of(const StepProfiler& prof) noexcept;
[[noreturn]] void throw_missing_stage(std::string_view what, std::string_view present,
                                      bool registered);
}  // namespace detail

/// The read side shared by StageTimings and TimingsSnapshot. `Derived` provides
/// `std::optional<double> find(StageId) const noexcept` and `const StepProfiler& profiler() const`
/// (whose stage names it uses).
template <class Derived>
class TimingsView {
 public:
  /// Seconds of `stage`, or nullopt when it did not run (or is unknown).
  std::optional<double> find(std::string_view stage) const noexcept {
    return self().find(detail::find_stage_of(self().profiler(), stage));
  }
  /// True when `stage` has a time in this breakdown.
  bool contains(std::string_view stage) const noexcept { return find(stage).has_value(); }
  /// True when stage `id` has a time in this breakdown.
  bool contains(StageId id) const noexcept { return self().find(id).has_value(); }
  /// Like find(), but throws std::out_of_range naming the stage and the stages that are present.
  double at(std::string_view stage) const {
    const StageId id = detail::find_stage_of(self().profiler(), stage);
    if (const auto v = self().find(id)) return *v;
    detail::throw_missing_stage(stage, present(), id != kNoStage);
  }
  /// Seconds of stage `id`; throws std::out_of_range naming it (or "(unknown id)") and the stages
  /// that are present.
  double at(StageId id) const {
    if (const auto v = self().find(id)) return *v;
    const bool known = id < detail::stage_count_of(self().profiler());
    detail::throw_missing_stage(
        known ? detail::stage_name_of(self().profiler(), id) : std::string_view("(unknown id)"),
        present(), known);
  }
  /// Number of stages present (counts them: O(stages)).
  std::size_t size() const noexcept {
    std::size_t n = 0;
    for_each([&](std::string_view, double) { ++n; });
    return n;
  }
  /// Calls f(std::string_view name, double seconds) for each present stage, in registration order
  /// ("step" and "period" first).
  template <class F>
  void for_each(F&& f) const {
    const StageId n = detail::stage_count_of(self().profiler());
    for (StageId i = 0; i < n; ++i)
      if (const auto v = self().find(i)) f(detail::stage_name_of(self().profiler(), i), *v);
  }
  /// A copy as an ordinary map (allocates).
  std::map<std::string, double, std::less<>> to_map() const {
    std::map<std::string, double, std::less<>> m;
    for_each([&](std::string_view n, double v) { m.emplace(std::string(n), v); });
    return m;
  }
  /// "physics, sensors, step" (allocates).
  std::string present() const {
    std::string out;
    for_each([&](std::string_view n, double) {
      if (!out.empty()) out += ", ";
      out += n;
    });
    return out;
  }

 private:
  const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }
};

/// The published breakdown of the latest step. Owned by a StepProfiler; reads its slots directly,
/// so reading it allocates nothing and a step end rewrites nothing.
class StageTimings : public TimingsView<StageTimings> {
 public:
  using TimingsView<StageTimings>::find;
  /// True until the first step ends, and after a vetoed step.
  bool empty() const noexcept;
  /// Seconds of stage `id` in the latest step, or nullopt when it did not run.
  std::optional<double> find(StageId id) const noexcept;
  /// The profiler these timings belong to (it names the stages).
  const StepProfiler& profiler() const noexcept { return *owner_; }

 private:
  friend class StepProfiler;
  explicit StageTimings(const StepProfiler* owner) : owner_(owner) {}
  const StepProfiler* owner_;
};

/// A breakdown copied out of something else (device-side stage times, say), by stage id of a
/// profiler.
class TimingsSnapshot : public TimingsView<TimingsSnapshot> {
 public:
  using TimingsView<TimingsSnapshot>::find;
  /// An empty breakdown over the stages of `names`.
  explicit TimingsSnapshot(const StepProfiler& names) : names_(&names) {}
  /// True when no stage has a time.
  bool empty() const noexcept { return count_ == 0; }
  /// Seconds of stage `id`, or nullopt when none was set.
  std::optional<double> find(StageId id) const noexcept {
    if (id >= present_.size() || !present_[id]) return std::nullopt;
    return values_[id];
  }
  /// The profiler whose stage ids and names this uses.
  const StepProfiler& profiler() const noexcept { return *names_; }
  /// The profiler step these values belong to (meaningful when not empty).
  std::uint64_t step() const noexcept { return step_; }

  // Writers.
  /// Empties the snapshot and sizes it for `n_stages` without shrinking (no allocation once sized).
  void reset(std::uint64_t step, std::size_t n_stages) {
    if (values_.size() < n_stages) {
      values_.resize(n_stages, 0.0);
      present_.resize(n_stages, 0);
    }
    for (auto& p : present_) p = 0;
    count_ = 0;
    step_ = step;
  }
  /// Adds `seconds` to `id` (sets it when absent). `id` must be < the size given to reset().
  void add(StageId id, double seconds) noexcept {
    if (present_[id]) {
      values_[id] += seconds;
    } else {
      present_[id] = 1;
      values_[id] = seconds;
      ++count_;
    }
  }
  /// Forgets every time.
  void clear() noexcept {
    for (auto& p : present_) p = 0;
    count_ = 0;
  }

 private:
  const StepProfiler* names_;
  std::vector<double> values_;
  std::vector<std::uint8_t> present_;
  std::size_t count_ = 0;
  std::uint64_t step_ = 0;
};

}  // namespace simprof
