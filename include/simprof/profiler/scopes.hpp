// SPDX-License-Identifier: MIT
// The RAII scopes of a StepProfiler: one per concept, a step and a stage, each in two flavours
// chosen by a template parameter, as NVTX3 and Tracy do. StepScope / StageScope take a profiler by
// reference; OptionalStepScope / OptionalStageScope take a pointer and do nothing when it is null
// (an engine that runs with or without a profiler; SIMPROF_STEP and SIMPROF_STAGE), at one branch
// more. Their members are defined in step_profiler.hpp, which includes this header.
//
/* clang-format off */
//   auto step = prof.step();                                 // a StepScope
//   simprof::StepProfiler* attached = nullptr;                // an engine run without a profiler
//   simprof::OptionalStageScope s(attached, physics);         // does nothing: it is null
/* clang-format on */
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "simprof/profiler/timings.hpp"

namespace simprof {

class StepProfiler;

namespace detail {

/// One SIMPROF_STAGE call site (profiler/macros.hpp): its stage name, and the id that name has in
/// the profiler that ran the site last, keyed by that profiler's instance id. Constant-initialised,
/// so a function-local static of it needs no guard; the key is one atomic word, so a site that
/// threads with profilers of their own share stays correct (a different key: the name is looked up
/// again).
class StageSite {
 public:
  explicit constexpr StageSite(const char* name) noexcept : name_(name) {}
  /// The id of this site's name in `prof`: a load and a compare once the site has seen `prof`.
  StageId id(StepProfiler& prof);
  /// The stage name of the site.
  const char* name() const noexcept { return name_; }

 private:
  StageId refresh(StepProfiler& prof);
  const char* name_;
  std::atomic<std::uint64_t> key_{0};  // instance id << 32 | stage id; 0: none yet
};

/// A scope's profiler: a reference, or (Nullable) a pointer that may be null.
template <bool Nullable>
using ProfilerArg = std::conditional_t<Nullable, StepProfiler*, StepProfiler&>;
inline StepProfiler* pointer(StepProfiler& p) noexcept { return &p; }
inline StepProfiler* pointer(StepProfiler* p) noexcept { return p; }

}  // namespace detail

/// RAII stage: begins in the constructor, ends in the destructor. Not copyable or movable.
/// Nullable: takes a pointer and does nothing when it is null.
template <bool Nullable>
class BasicStageScope {
 public:
  /// The profiler, by reference (or, Nullable, by pointer).
  using Profiler = detail::ProfilerArg<Nullable>;
  /// Begins stage `id` of `prof`.
  BasicStageScope(Profiler prof, StageId id);
  /// The stage of a call site (SIMPROF_STAGE), its id cached there.
  BasicStageScope(Profiler prof, detail::StageSite& site);
  ~BasicStageScope();
  BasicStageScope(const BasicStageScope&) = delete;
  BasicStageScope& operator=(const BasicStageScope&) = delete;
  BasicStageScope(BasicStageScope&&) = delete;
  BasicStageScope& operator=(BasicStageScope&&) = delete;
  void* operator new(std::size_t) = delete;

 private:
  StepProfiler* prof_;
  StageId id_;
};

/// RAII step: begins (and runs the pre-step callbacks) in the constructor, ends in the destructor.
/// Nullable: takes a pointer and does nothing when it is null.
template <bool Nullable>
class BasicStepScope {
 public:
  /// The profiler, by reference (or, Nullable, by pointer).
  using Profiler = detail::ProfilerArg<Nullable>;
  /// Begins a step of `prof`.
  explicit BasicStepScope(Profiler prof);
  ~BasicStepScope();
  BasicStepScope(const BasicStepScope&) = delete;
  BasicStepScope& operator=(const BasicStepScope&) = delete;
  BasicStepScope(BasicStepScope&&) = delete;
  BasicStepScope& operator=(BasicStepScope&&) = delete;
  void* operator new(std::size_t) = delete;

  /// False when a pre-step callback vetoed the step: skip the simulation work (true without a
  /// profiler).
  explicit operator bool() const noexcept;
  /// Whether the step was vetoed.
  bool vetoed() const noexcept { return !static_cast<bool>(*this); }
  /// Vetoes the step from inside (e.g. the viewer is paused).
  void veto() noexcept;

 private:
  StepProfiler* prof_;
  int uncaught_at_begin_;  // exceptions in flight when the step began
};

/// A stage of a profiler held by reference.
using StageScope = BasicStageScope<false>;
/// A stage scope that does nothing when its profiler is null.
using OptionalStageScope = BasicStageScope<true>;
/// A step of a profiler held by reference.
using StepScope = BasicStepScope<false>;
/// A step scope that does nothing when its profiler is null (SIMPROF_STEP's scope).
using OptionalStepScope = BasicStepScope<true>;

}  // namespace simprof
