// SPDX-License-Identifier: MIT
// EngineZones: an engine's own begin/end profiling hooks (Bullet's btEnterProfileZone /
// btLeaveProfileZone, a PhysX profiler callback) as StepProfiler stages. Zones nest as sub-stages
// of `under`: "physics/stepSimulation/internalSingleStepSimulation".
//
/* clang-format off */
//   simprof::EngineZones zones(prof, "physics");   // on the loop's thread, before the steps
//   {
//     auto step = prof.step();
//     zones.enter("stepSimulation");                // from the engine's callbacks
//     zones.enter("performDiscreteCollisionDetection");
//     zones.leave();
//     zones.leave();
//   }
//   prof.timings().at("physics/stepSimulation");    // wall time on the loop's thread
/* clang-format on */
//
// On the loop's thread (the one that made the EngineZones) a zone is a stage scope: wall time, in
// timings(), stats() and the trace. A name is mapped to its stage once per (name pointer, parent).
//
// On any other thread (a pool stepping several worlds) a zone never touches the loop's stages: its
// time is summed per zone path on that thread and taken at the loop's step end into
// worker_cpu_seconds(): CPU time summed across threads, which may exceed the step's wall time, so
// never added to timings(). A thread keeps kMaxWorkerDepth zones open; a deeper one (and what is
// inside it) is not counted, its leave() pairing with it. While a listener wants worker zones (a
// TraceSession), each one also reaches on_worker_zone() at the step end, on its thread's track.
// How a zone stays cheap (no lock, no string work): src/profiler/zones/lanes.hpp and
// docs/engines.md.
//
// Misuse is said once (a warning through simprof's logger) and corrupts nothing: a zone still open
// on the loop's thread when the step ends is closed there and the step still ends (the engine's
// later leave() pairs with it silently); a leave() with no zone open does nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "simprof/profiler/step_profiler.hpp"

namespace simprof {

namespace detail {
class EngineZonesState;  // src/profiler/zones/state.hpp
}  // namespace detail

/// An engine's zone hooks as stages of a StepProfiler (see the header comment).
class EngineZones {
 public:
  /// Worker-thread zones kept for the listeners between two step ends, per worker thread; beyond,
  /// their spans are dropped (counted in dropped(), and said once). Their CPU time still counts,
  /// except for paths beyond kMaxSums (which have no sum).
  static constexpr std::size_t kMaxPending = std::size_t{1} << 14;
  /// Distinct zone paths a worker thread sums itself; a path beyond goes through the queue.
  static constexpr std::uint32_t kMaxSums = 1024;
  /// Zones a worker thread keeps open at once (all EngineZones together); a zone nested deeper is
  /// not counted (said once), and its leave() pairs with it.
  static constexpr std::uint32_t kMaxWorkerDepth = 32;

  /// Attaches to `prof` (which must outlive this), with zones as sub-stages of `under` ("" for
  /// top-level stages; otherwise a valid stage name, std::invalid_argument if not). The calling
  /// thread is the loop's thread: the one that runs the steps.
  explicit EngineZones(StepProfiler& prof, std::string_view under = "physics");
  /// Detaches from the profiler. Zones still open on worker threads are forgotten.
  ~EngineZones();
  EngineZones(const EngineZones&) = delete;
  EngineZones& operator=(const EngineZones&) = delete;

  /// A zone named `name` begins on the calling thread. `name` is a string the engine keeps (a
  /// literal): its pointer is the cache key, its text is read once. Never throws.
  void enter(const char* name) noexcept;
  /// The calling thread's innermost zone ends. Never throws.
  void leave() noexcept;

  /// Worker-thread CPU seconds of stage `id` handed over in the latest step end, summed across
  /// threads (a top-level zone also counts into `under` and its parents); nullopt when none ran.
  std::optional<double> worker_cpu_seconds(StageId id) const noexcept;
  /// worker_cpu_seconds() by name; nullopt for an unknown name too.
  std::optional<double> worker_cpu_seconds(std::string_view name) const noexcept;
  /// Worker-thread zones whose spans (or, for a path beyond kMaxSums, whose time) were dropped so
  /// far because more than kMaxPending waited for a step end.
  std::uint64_t dropped() const noexcept;
  /// The stage zones are sub-stages of (kNoStage for top-level zones).
  StageId under() const noexcept;

 private:
  // The zones' state and per-thread layout (src/profiler/zones/state.hpp); the profiler
  // holds it too, for its step ends.
  std::unique_ptr<detail::EngineZonesState> impl_;
};

}  // namespace simprof
