// SPDX-License-Identifier: MIT
// DeviceStageTimer's insides: the device records, and the timer's state, one struct per ring slot.
// Shared by its steps (stage_timer.cpp), kernels (stage_kernels.cu), stamped copies
// (stage_stamps.cpp) and joining (stage_join.cpp: means); its arithmetic is stage_walk.*.
// Private to src/cuda/timing.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/handle.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"
#include "simprof/detail/ring.hpp"
#include "stage_walk.hpp"
#include "stamp_graph.hpp"
#include "stamp_timer.hpp"

namespace simprof::cuda {

namespace detail {

constexpr int kMaxAliases = 128;  // eager boundaries a step may merge into earlier stamps

// One step's readings. `step` tags the record with the host's step index (low 32 bits): a stamp
// of a replayed graph finds its record through the step index the stream wrote before the step's
// work. The eager stamps' times go to `eager` at the places the host chose (in stream order: what
// each one marks stays on the host, Slot::eager_at).
struct StepRecord {
  unsigned int step;
  unsigned int count;  // entries reserved (atomically: stamps of a graph run in any order)
  unsigned int overflow;
  unsigned int eager_count;  // as read back only: the eager times published
  unsigned long long t_begin;
  unsigned long long t_end;
  StampEntry entries[DeviceStageTimer::kMaxStamps];
  unsigned long long eager[DeviceStageTimer::kMaxStamps];
};

// The timer's kernels (stage_kernels.cu): the stamps a stamped copy adds, the eager stamp
// (arguments: at, begin, tag) and the publication (one block of kPublishThreads; arguments:
// Publication::args).
const void* begin_kernel_fn() noexcept;
const void* stamp_kernel_fn() noexcept;
const void* eager_stamp_kernel_fn() noexcept;
const void* publish_kernel_fn() noexcept;
constexpr unsigned kPublishThreads = 128;

constexpr int kPerNode = 8;  // boundaries one stamp kernel records (they share a device instant)

struct StampArgs {
  StepRecord* recs;
  const unsigned* step;  // written by the stream at every step's start; kNotTimed: skip
  unsigned ring;
  int n;
  int stage[kPerNode];
  int kind[kPerNode];
};

// Where the stamps of the capture in progress go: after which captured nodes, with what entries.
// Boundaries with no work between them (the same dependencies) share one stamp. The captured graph
// itself is never touched: the stamps are added to a copy (instrumented_copy).
struct CaptureStamps {
  struct Stamp {
    std::vector<cudaGraphNode_t> deps;
    StampArgs args;
  };
  unsigned long long id = 0;
  cudaGraph_t graph = nullptr;
  std::vector<Stamp> stamps;
};

}  // namespace detail

struct DeviceStageTimer::Impl final : detail::StampTimer {
  Impl(StepProfiler& prof, cudaStream_t stream, DeviceStageTimerOptions options);

  void on_step_begin(std::uint64_t step, std::int64_t ticks) override;
  void on_stage_begin(StageId id, std::int64_t ticks) override;
  void on_stage_end(StageId id, std::int64_t ticks) override;
  void on_step_end(std::uint64_t step, std::int64_t ticks, StepOutcome outcome) override;

  void set_stream(cudaStream_t stream) noexcept;
  void poll() noexcept;
  void synchronize();
  double mean(StageId id) const noexcept;
  double sampled_mean(StageId id) const noexcept;
  std::uint64_t count(StageId id) const noexcept;

  void boundary(StageId stage, int kind) noexcept;
  void note_unstamped(std::uint64_t step) noexcept;
  void eager_stamp(StageId stage, int kind) noexcept;
  cudaError_t launch_eager_stamp(unsigned long long* at, detail::StepRecord* begin,
                                 unsigned tag) noexcept;
  bool merged_eager(StageId stage, int kind) noexcept;
  void set_publication();
  void join(const detail::StepRecord& r, std::uint64_t step);
  void unpaired(StageId id, std::uint64_t step);
  void device_step(const DeviceStep& d);
  // The captured graph's copy with the capture's noted stamps (null: none noted).
  cudaGraph_t stamped_copy(cudaGraph_t graph) override;
  double calibrate();    // what one eager stamp adds to a stage, ns, in the launch mode in force
  void measure_costs();  // the device's eager stamp costs, measured once (stamp_cost.hpp)
  // A stamped step whose record could not be published: counted as dropped, and said.
  void lost_publication(const char* what, cudaError_t e) noexcept {
    ++dropped;
    failed(what, e);
  }

  // A sampled step's launch runs the stamped copy.
  bool instrumented_launch() noexcept override {
    if (skip) return false;
    step_copy = true;
    return true;
  }

  // One step's place in the ring (step % ring), from its start to its join.
  struct Slot {
    bool stamped = false;       // the step is stamped
    bool unread = false;        // its step's record was published and is not joined yet
    unsigned eager_stamps = 0;  // eager stamps launched in the step
    bool eager_lost = false;  // an eager boundary went unstamped (past kMaxStamps, a failed launch)
    bool plain = false;       // its eager stamps were plain launches (a kernel tracer's window)
    std::array<detail::StageMark, kMaxStamps> eager_at;
    unsigned n_aliases = 0;
    std::array<detail::MergedMark, detail::kMaxAliases> aliases;
    bool completed = false;  // the host's outcome
    DeviceStep device;       // the pacer's times, until joined
    bool have_device = false;
  };
  // A stage's device seconds over the joined steps, and the latest ones (samples()).
  struct Sum {
    detail::RunningStat stat;
    simprof::detail::Ring<double> recent{DeviceStageTimer::kSampleHistory};
    // `sample`: also one of samples() (false for a pacer group's copies of one measured period).
    void add(double s, bool sample = true) noexcept {
      stat.add(s);
      if (sample) recent.push(s);
    }
  };
  const Sum* sum_of(StageId id) const noexcept;  // what mean(id) is over; null: nothing

  DeviceStageTimerOptions options;
  std::optional<StepPacer> pacer;  // driven: called first at each step begin and end
  // The engine's records are the steps' (by step % ring), found by the tag (the step in progress,
  // written by the stream at its start), published by publish_kernel beside the step.
  // publish_kernel's arguments, read at each publication: set before it.
  struct Publication {
    const detail::StepRecord* recs = nullptr;
    detail::StepRecord* to = nullptr;  // the reading's slot, as the device sees it
    unsigned ring = 0;
    unsigned long long step = 0;
    unsigned eager = 0;  // the step's eager stamps
    void* args[5] = {&recs, &to, &ring, &step, &eager};
    Publication() = default;
    Publication(const Publication&) = delete;  // args point into this one
    Publication& operator=(const Publication&) = delete;
  } publication;
  detail::CaptureStamps capture;  // stamp nodes of the capture in progress
  std::vector<Slot> slots;        // by step % ring
  bool began_eagerly = false;     // the step in progress has an eager begin stamp
  std::size_t slot_now = 0;       // the step in progress's slot
  unsigned step_tag = 0;          // the step in progress's index (low 32 bits)
  // Eager stamps are launched as programmatic dependents (compute capability 9.0 and up): each is
  // on the GPU already when the work before it ends, and waits for it there (griddepcontrol).
  bool dependent_launch = false;
  // ... except in steps a kernel tracer traces: there CUPTI would record a dependent stamp as
  // starting before the kernel ahead of it ended (an impossible trace), so they are plain launches,
  // whose own cost is measured apart (eager_stamp_plain_ns).
  bool plain_now = false;
  double eager_stamp_plain_ns = 0;
  // The step in progress: a stage boundary seen, a stamped copy launched. A sampled step with
  // neither, in a loop whose steps had boundaries before, replayed a graph without the timer's
  // stamps (a GraphCache not given instrumentation()): counted in unstamped, said once.
  bool step_boundaries = false;
  bool step_copy = false;
  bool seen_boundaries = false;
  std::uint64_t n_unstamped = 0;
  // When the latest eager stamp's launch returned (steady clock, ns; kept with merging on only):
  // merge_within_ns from it.
  std::int64_t last_eager_ns = 0;
  detail::StageWalk walk{2 * kMaxStamps + detail::kMaxAliases};  // join()'s arithmetic
  bool skip = false;          // this step is not stamped (not sampled, or the ring was full)
  double eager_stamp_ns = 0;  // what one eager stamp adds to a stage around it (calibrate())
  TimingsSnapshot latest;
  TimingsSnapshot scratch;
  std::vector<Sum> sums;  // by stage
  Sum loop[2];            // step, period of the unstamped steps (from the pacer)
  std::uint64_t prev_step = 0;
  std::uint64_t prev_begin_ns = 0;
  bool have_prev = false;
  std::uint64_t joined = 0, dropped = 0, n_unpaired = 0, n_merged = 0;
  // Said once each (the voice says the first failed call): an unstamped step, an unpaired stage.
  detail::SaidOnce unstamped_said, unpaired_said;
  std::optional<detail::TimerTies> ties;  // last: made last, the first to go
};

}  // namespace simprof::cuda
