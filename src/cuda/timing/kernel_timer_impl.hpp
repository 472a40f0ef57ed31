// SPDX-License-Identifier: MIT
// GraphKernelTimer's insides: a stamped copy's nodes and slots, and the timer's state. Shared by
// kernel_timer.cu (sampling), kernel_copy.cpp (stamped copies), kernel_read.cpp (readings),
// kernel_trace.cpp (trace windows) and node_describe.cpp; its arithmetic is node_stamps.*.
// Private to src/cuda/timing.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "clock_probe.hpp"
#include "node_stamps.hpp"
#include "simprof/base/log.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/handle.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/kernel_timer.hpp"
#include "stamp_graph.hpp"
#include "stamp_timer.hpp"

namespace simprof::cuda {

// One node of a copy: what it is, and where its start comes from.
struct NodeInfo {
  std::string name;
  bool kernel = false;
  StageId stage = kNoStage;
  std::uint64_t node_id = 0;
  std::uint32_t index = 0;
  std::vector<std::uint32_t> starts;  // stamp slots within the copy (kHopSlot: a root's start)
  detail::RunningStat time;           // its seconds in the replays read
  // In a trace: kKernel, kMemcpy or kMemset (kCpuStage: another kind of node, not traced), and
  // Kineto's fields of its kind.
  SpanKind traced = SpanKind::kCpuStage;
  Dim3 grid, block;
  std::uint32_t registers = 0, shared_memory = 0;
  std::uint64_t bytes = 0;
  CopyKind copy = CopyKind::kUnknown;
  std::string stage_name;  // resolved on the loop's thread: a background writer reads it
};

namespace detail {
// The node stamp (kernel_timer.cu; argument: unsigned long long* at, the stamp's slot).
const void* node_stamp_kernel_fn() noexcept;
// A node as the trace shows it: kernels, copies and memsets (node_describe.cpp).
void describe_node(cudaGraphNode_t node, cudaGraphNodeType type, int device, NodeInfo& info);
}  // namespace detail

using detail::ClockPoint;
using detail::kBeginSlot;
using detail::kFirstNode;
using detail::kHopSlot;

// A stamped copy: its stamps' slots in the device row [offset, offset + kFirstNode + nodes.size()).
struct Copy {
  cudaGraph_t made = nullptr;  // the graph handed out (alive until copy_released())
  std::uint64_t made_in = 0;   // the step it was made in (readings of earlier steps are not its)
  // copy_released(): the first step it cannot have run in (readings of it and later are not its;
  // those of earlier steps still arriving are); its slots are free from then.
  std::uint64_t retired_from = std::numeric_limits<std::uint64_t>::max();
  bool retired() const { return retired_from != std::numeric_limits<std::uint64_t>::max(); }
  std::size_t offset = 0;
  std::uint64_t graph_id = 0;
  std::vector<NodeInfo> nodes;
  std::size_t slots() const { return kFirstNode + nodes.size(); }
};

struct GraphKernelTimer::Impl final : detail::StampTimer {
  struct Pending;
  Impl(StepProfiler& prof, cudaStream_t stream, GraphKernelTimerOptions o);

  void on_step_begin(std::uint64_t step, std::int64_t ticks) override;
  void on_stage_begin(StageId id, std::int64_t ticks) override;
  void on_stage_end(StageId id, std::int64_t ticks) override;
  void on_step_end(std::uint64_t step, std::int64_t ticks, StepOutcome outcome) override;

  void place_captured(StageId open) noexcept;  // nodes captured so far that have no stage: `open`
  // The copy of `graph` (throws CudaError; null: nothing to stamp, or no room), kept in `copies`:
  // its nodes described and their slots reserved (plan_copy), then the clone with its stamps
  // (stamp_copy).
  cudaGraph_t stamped_copy(cudaGraph_t graph) override;
  void copy_failed() noexcept override { ++n_unstamped; }
  bool plan_copy(cudaGraph_t graph, Copy& c, std::vector<cudaGraphNode_t>& stamped);
  cudaGraph_t stamp_copy(cudaGraph_t graph, const Copy& c,
                         const std::vector<cudaGraphNode_t>& stamped);
  // With `mu` held: the sampled step's row zeroed (begin) and read back (finish); the readings in.
  void begin_sample(std::uint64_t step) noexcept;
  void finish_sample(std::uint64_t step) noexcept;
  void poll_locked() noexcept;
  void read(std::size_t slot, std::uint64_t step, const Pending& p) noexcept;
  void release(cudaGraph_t copy) noexcept;
  unsigned long long* row() const noexcept { return engine.record<unsigned long long>(0); }
  void add_spans(std::vector<Span>& out);  // the window's replays, with `mu` held
  // With `mu` held: a new window generation (readings of earlier ones are no window's, nothing
  // counted yet); the step in progress, already stamped, made the window's.
  void next_generation() noexcept;
  bool adopt_sampled_step() noexcept;  // false: no step in progress is stamped
  // The hook a GraphCache calls (StampHook): a sampled step's launches run the stamped copies.
  void capture_begins(cudaStream_t s) noexcept override;
  bool instrumented_launch() noexcept override { return sampled; }
  void copy_released(cudaGraph_t copy) noexcept override { release(copy); }

  // What a sampled step's reading holds, by its slot in the readings.
  struct Pending {
    std::size_t used = 0;   // stamps in use when the step ended
    bool traced = false;    // a trace window's step...
    std::uint64_t gen = 0;  // ...of this window (or warm-up) generation
  };

  GraphKernelTimerOptions options;
  // The engine's one record is the row every copy's stamps write into, reused by each sampled
  // step and copied into its reading on the step's stream.
  // Guards what a background TraceSession's writer also reads: the ring's state, the copies, the
  // statistics and the window's readings. The loop's thread takes it on sampled steps and while
  // readings are on their way; the writer, never while it waits for the GPU.
  mutable std::mutex mu;
  std::vector<Pending> pending;  // by slot of the readings
  std::vector<Copy> copies;
  detail::SlotRanges ranges;   // the row's slots the copies hold
  std::uint64_t step_now = 0;  // the step in progress
  bool begun = false;          // a step is in progress (our on_step_begin ran, on_step_end not yet)
  bool sampled = false;        // the step in progress runs the stamped copies
  std::uint64_t sampled_step = 0;
  bool sampled_traced = false;  // ...in a trace window of generation sampled_gen
  std::uint64_t sampled_gen = 0;
  // The capture in progress (its stream: capture_stream): its graph, the stages open, the nodes
  // placed.
  cudaGraph_t capture_graph = nullptr;
  std::vector<StageId> open_stages;
  std::unordered_map<cudaGraphNode_t, StageId> placed;
  std::vector<cudaGraphNode_t> scratch;
  double hop_ns = 0;      // calibrated when made; then the mean of the replays' own hops
  double hop_sum_ns = 0;  // over the replays read
  std::uint64_t n_replays = 0, n_missed = 0, n_dropped = 0, n_unstamped = 0;
  std::function<void(const KernelReplay&)> on_replay;
  KernelReplay replay;  // scratch for on_replay
  // Said once each: the first of the timer's other problems (the loop's thread and a background
  // writer may both say one), and the host outrunning the ring (its own fix: pace the loop).
  detail::SaidOnce said, said_ring;

  // Trace windows (TraceSource). The window's flags and counts are under `mu`.
  TimeBase time_base;
  std::uint32_t stream_id = 0;   // CUPTI's number of the stream (its kernel records' streamId)
  bool window_open = false;      // the steps now are a window's (warm-up or active)
  std::uint64_t window_gen = 0;  // readings of another generation are not the window's
  std::uint64_t window_sampled = 0, window_done = 0;  // its stamped steps; those read or lost
  struct Traced {  // a window's replay as read: its copy and its stamps
    std::uint64_t step = 0;
    std::uint32_t copy = 0;
    std::size_t at = 0;  // its stamps: traced_stamps[at, at + copy's slots)
  };
  std::vector<Traced> traced;
  std::vector<unsigned long long> traced_stamps;
  std::uint64_t window_lost = 0, trace_lost = 0;
  std::uint64_t window_missed = 0;  // the window's steps that ran no stamped copy
  struct LastWindow {               // what describe() says of the window collected last
    std::size_t replays = 0;
    std::uint64_t missed = 0, lost = 0;
    bool cupti = false;
  } last_window;
  bool window_cupti = false;  // a KernelTracer traced the window: its records are the truth

  ClockPoint clock_from, clock_to;  // at the window's start, at its collection
  std::atomic<double> clock_error{0};
  detail::ClockProbe probe;               // start() and stop_and_collect() only
  std::optional<detail::TimerTies> ties;  // last: made last, the first to go
};

}  // namespace simprof::cuda
