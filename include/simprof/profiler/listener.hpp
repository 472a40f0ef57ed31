// SPDX-License-Identifier: MIT
// StepListener: the seam through which everything that watches a step plugs into a StepProfiler —
// the trace session, NVTX ranges, device-side stage times. The core calls it; the CUDA backend
// implements it, so the core never sees a CUDA header.
//
/* clang-format off */
//   struct Printer : simprof::StepListener {
//     void on_stage_end(simprof::StageId id, std::int64_t ticks) override { /* ... */ }
//   };
//   Printer p;
//   simprof::ListenerAttachment attached = prof.attach(p);  // detached when `attached` goes
/* clang-format on */
#pragma once

#include <cstdint>
#include <utility>

#include "simprof/profiler/timings.hpp"

namespace simprof {

struct Collective;   // profiler/collective.hpp
class StepProfiler;  // profiler/step_profiler.hpp

/// How a step ended, as listeners see it.
enum class StepOutcome { kCompleted, kVetoed, kAborted };

/// Receives the raw events of every step (timestamps in ticks of StepProfiler::clock()). The trace
/// recorder, NVTX ranges and device-side stage events plug in here. Called on the loop's thread;
/// must not throw. Costs one branch per event while no listener is attached.
class StepListener {
 public:
  virtual ~StepListener() = default;
  /// A step began at `ticks` of the profiler's clock; `step` is its index.
  virtual void on_step_begin(std::uint64_t /*step*/, std::int64_t /*ticks*/) {}
  /// Stage `id` began at `ticks`.
  virtual void on_stage_begin(StageId /*id*/, std::int64_t /*ticks*/) {}
  /// Stage `id` ended at `ticks`.
  virtual void on_stage_end(StageId /*id*/, std::int64_t /*ticks*/) {}
  /// Stage `id` ran [begin_ticks, end_ticks) as the engine measured it (StepProfiler::record()):
  /// the profiler placed it inside the innermost open stage, after the span that ended last there.
  virtual void on_stage_recorded(StageId /*id*/, std::int64_t /*begin_ticks*/,
                                 std::int64_t /*end_ticks*/) {}
  /// A zone on an engine's worker thread `tid` (the OS thread id) ran stage `id` from
  /// `begin_ticks` to `end_ticks` (EngineZones). Called on the loop's thread at the end of the
  /// step in which the zone was handed over; its time is that thread's, not the loop's.
  virtual void on_worker_zone(StageId /*id*/, std::int64_t /*begin_ticks*/,
                              std::int64_t /*end_ticks*/, std::int64_t /*tid*/) {}
  /// Whether on_worker_zone() is wanted. While no listener of a profiler wants it, EngineZones
  /// hands no single worker zone over: a step end reads one sum per worker thread and zone path.
  /// Asked when a listener is added or removed, so the answer must not change while it is attached;
  /// a listener that only times steps says false (and then gets no on_worker_zone() calls).
  virtual bool wants_worker_zones() const noexcept { return true; }
  /// Step `step` ended at `ticks`; the outcome says whether it was published, vetoed or aborted.
  virtual void on_step_end(std::uint64_t /*step*/, std::int64_t /*ticks*/, StepOutcome) {}
  /// A collective scope (profiler/collective.hpp) ended, on the thread that ran it.
  virtual void on_collective(const Collective& /*c*/, std::int64_t /*begin_ticks*/,
                             std::int64_t /*end_ticks*/) {}
};

/// A listener's place among a profiler's listeners, held (StepProfiler::attach): attached while it
/// lives, detached when it goes. Either side may go first: a profiler that goes first detaches it,
/// and it is then empty.
class ListenerAttachment {
 public:
  ListenerAttachment() = default;
  ~ListenerAttachment() { detach(); }
  /// Takes `other`'s place (`other` is left empty).
  ListenerAttachment(ListenerAttachment&& other) noexcept { *this = std::move(other); }
  /// Detaches this one's listener, then takes `other`'s place.
  ListenerAttachment& operator=(ListenerAttachment&& other) noexcept;
  ListenerAttachment(const ListenerAttachment&) = delete;
  ListenerAttachment& operator=(const ListenerAttachment&) = delete;
  /// Whether the listener is attached (false once detached or its profiler gone).
  explicit operator bool() const noexcept { return prof_ != nullptr; }
  /// Detaches the listener now (nothing when already detached).
  void detach() noexcept;

 private:
  friend class StepProfiler;
  ListenerAttachment(StepProfiler* prof, StepListener* listener) noexcept
      : prof_(prof), listener_(listener) {}
  StepProfiler* prof_ = nullptr;
  StepListener* listener_ = nullptr;
};

}  // namespace simprof
