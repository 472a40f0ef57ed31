// SPDX-License-Identifier: MIT
// GraphKernelTimer: the device time of every kernel inside a replayed graph, without CUPTI.
//
// Each captured graph gets a stamped copy (graphs/instrumentation.hpp), launched on one step in
// `sample_every`; other steps replay the graph untouched. A one-thread stamp follows every node in
// the chain; a node's device time is its stamp less the latest of its predecessors' stamps, less
// the replay's hop (what one stamp adds, measured in every stamped replay). Nodes are named by
// their function, placed in the stage open when they were captured, and carry CUPTI's graph and
// node ids; no CUPTI call subscribes, so it works beside Nsight Systems or torch.profiler. Added to
// a TraceSession, it stamps every step of each window and writes each node as a Kineto kernel span.
// How it works and what it costs: docs/gpu-truth.md ("Every kernel of a replayed graph").
//
/* clang-format off */
//   simprof::cuda::GraphKernelTimer kernels(prof, stream);            // 1 replay in 128 stamped
//   simprof::cuda::GraphCache cache(stream);
//   cache.attach(kernels.instrumentation());   // beside a DeviceStageTimer's, if there is one
//   for (int i = 0; i < n; ++i) { auto step = prof.step(); cache.run({n_envs}, body); }
//   kernels.synchronize();
//   std::fputs(simprof::cuda::kernel_table(kernels).c_str(), stdout);
//   auto joined = session.add_source(&kernels);  // a TraceSession: its windows get device spans
/* clang-format on */
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "simprof/cuda/graphs/instrumentation.hpp"
#include "simprof/cuda/timing/stamp_cost.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/trace/session.hpp"

namespace simprof::cuda {

/// How a GraphKernelTimer samples.
struct GraphKernelTimerOptions {
  /// Steps whose index modulo this is `sample_offset` run the stamped copies (>= 1). A stamped
  /// replay is longer than a plain one; sampling spreads that cost (docs/performance.md).
  int sample_every = 128;
  /// Which step of each `sample_every` (0 <= offset < sample_every); -1: 8 when sample_every is
  /// above 8, else 0. With sample_every a multiple of 16, offset 8 is never one of a
  /// DeviceStageTimer's default samples (the multiples of 16); where both sample a step, the
  /// GraphCache runs the copy of the tool attached first.
  int sample_offset = -1;
  /// Stamps of all the copies made (a node's stamp and a copy's begin stamp take one each). A
  /// copy that would pass it is not made: its graph replays unstamped (counted in unstamped()).
  std::size_t max_stamps = std::size_t{1} << 14;
  /// Sampled steps whose readings may be on their way to the host at once (>= 1). A sampled step
  /// that finds them all still on their way (a host ring x sample_every steps ahead of the GPU) is
  /// not stamped: counted in dropped(), never waited for.
  std::size_t ring = 8;
  /// Added to a TraceSession: every step of a window (warm-up and active) runs the stamped copies,
  /// so that each of its replays is in the trace; a window's step that finds the ring full waits
  /// for the oldest reading instead of dropping it. Not while a KernelTracer traces a window (its
  /// CUPTI records are the spans then). false: only the sampled steps that fall in a window are
  /// traced. A graph launched more than once in a stamped step is read once (its last launch).
  bool trace_every_step = true;
};

/// One node of a replayed graph and its device times over the sampled replays.
struct KernelNodeTime {
  /// The kernel's name, demangled ("memcpy", "memset", "host", "graph", ... for other nodes).
  std::string name;
  bool kernel = false;       ///< a kernel node (the others are timed as the kernels' starts)
  StageId stage = kNoStage;  ///< the innermost stage open when the node was captured
  std::string stage_name;    ///< its name ("" when no stage was open)
  /// CUPTI's id of the graph as captured (0 where CUPTI could not say).
  std::uint64_t graph_id = 0;
  std::uint64_t node_id = 0;  ///< CUPTI's id of the node in that graph (0 where it could not say)
  std::uint32_t copy = 0;     ///< which stamped copy (the timer's count, from 0)
  std::uint32_t index = 0;    ///< the node's place in its graph's node list
  std::uint64_t count = 0;    ///< sampled replays that timed it
  double mean_s = 0;          ///< mean device seconds over those replays
  double min_s = 0;           ///< shortest
  double max_s = 0;           ///< longest
};

/// One sampled replay of one stamped copy, as read (set_on_replay()).
struct KernelReplay {
  std::uint64_t step = 0;  ///< the profiler's step index
  std::uint32_t copy = 0;  ///< which copy
  /// The replay's span: its begin stamp to its last stamp, seconds.
  double span_s = 0;
  /// Device seconds of each stamped node, in the order of nodes()' rows of this copy.
  std::vector<double> node_s;
};

/// Device times of every node of the graphs a GraphCache (or InstrumentedGraph) replays, from
/// stamped copies launched on sampled steps (see the header comment).
class GraphKernelTimer final : public TraceSource {
 public:
  /// Attaches to `prof` (its stage boundaries place the nodes captured between them); `stream` is
  /// the one the graphs are launched on. Throws std::invalid_argument for bad options, CudaError
  /// when the device buffers or the calibration fail.
  GraphKernelTimer(StepProfiler& prof, cudaStream_t stream, GraphKernelTimerOptions options = {});
  ~GraphKernelTimer() override;
  GraphKernelTimer(const GraphKernelTimer&) = delete;
  GraphKernelTimer& operator=(const GraphKernelTimer&) = delete;

  /// What a GraphCache (attach()) or an InstrumentedGraph takes: the stamped copies. Held weakly
  /// there; the timer and its users may go in either order. The copies must be launched on the
  /// timer's stream (the row of stamps is reset and read back there).
  std::shared_ptr<GraphInstrumentation> instrumentation() const noexcept;
  /// Reads every sampled replay whose stamps are in, without waiting (called at each step end
  /// while one is on its way).
  void poll() noexcept;
  /// Waits for the sampled replays in flight, then reads them.
  void synchronize();
  /// Every stamped node of every copy still launched, copy by copy in node order (kernels and the
  /// rest). A copy whose executable is gone (a recapture, an eviction) is left out: its statistics
  /// end with it, and the recapture's copy starts its own.
  std::vector<KernelNodeTime> nodes() const;
  /// Sampled replays read (one per copy launched on a sampled step).
  std::uint64_t replays() const noexcept;
  /// Sampled steps that ran no stamped copy (no graph launched, or another tool's copy ran).
  std::uint64_t missed() const noexcept;
  /// Replays left out because a stamp did not run, or because the ring was full (the timer's first
  /// problem of any kind is logged once; every one is counted).
  std::uint64_t dropped() const noexcept;
  /// Graphs that got no stamped copy (more stamps than max_stamps, or a CUDA failure).
  std::uint64_t unstamped() const noexcept;
  /// What one stamp adds to a chain, nanoseconds: the mean over the replays read of each one's own
  /// hop (taken from that replay's readings); until one is read, the device's measured hop.
  double hop_ns() const noexcept;
  /// The stamp costs measured on the timer's device (stamp_cost.hpp).
  StampCost stamp_cost() const;
  /// Called with every replay read, on the thread that reads it (poll(), synchronize(), or a
  /// background TraceSession's writer collecting a window).
  void set_on_replay(std::function<void(const KernelReplay&)> fn);
  /// The options the timer was made with (sample_offset resolved).
  const GraphKernelTimerOptions& options() const noexcept;
  /// How far a trace span may sit from where the GPU ran it, nanoseconds: the larger of the last
  /// collected window's two half round trips (its start's and its collection's clock alignment);
  /// 0 until a window is collected.
  double clock_error_ns() const noexcept;
  /// Traced replays left out of windows (a stamp that did not run, a reading that never came, no
  /// clock alignment), over the timer's life.
  std::uint64_t trace_dropped() const noexcept;

  ///@{
  /// TraceSource (session.hpp): the device spans of the stamped replays of each window.
  void bind(const TimeBase& time_base) override;
  void start() override;
  void discard() override;
  void stop() override;
  std::uint64_t stop_and_collect(std::vector<Span>& out) override;
  void describe(Trace& trace) const override;
  void abandon() noexcept override;
  ///@}

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// The kernels of the replayed graphs, grouped by stage (stages by their kernels' summed device
/// time, kernels within by their own): mean, min and max device microseconds per sampled replay
/// and the share of the stamped replays' summed kernel time. `top`: kernels shown per stage (the
/// rest summed in one line).
std::string kernel_table(const GraphKernelTimer& timer, std::size_t top = 10);

}  // namespace simprof::cuda
