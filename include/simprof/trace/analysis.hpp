// SPDX-License-Identifier: MIT
// What a trace says about a step: GPU busy time, idle gaps, launch latency, kernels per step, and a
// verdict — launch-bound (the GPU mostly waits for the host; with the step time predicted for a
// CUDA graph) or GPU-bound (with the kernels that dominate). Plus a kernel table like torch's
// key_averages().
//
/* clang-format off */
//   auto a = simprof::analyze(trace);
//   std::fputs(a.report().c_str(), stdout);
/* clang-format on */
//
// It reads the typed spans: steps are the session's step spans (Span::is_step()), and a kernel
// belongs to the step whose host span holds the launch (kernel or graph launch, runtime or driver
// API) with the kernel's correlation id. Communication kernels (NCCL's) are counted apart: their
// time in the step, and how much of it overlapped computation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simprof/trace/span.hpp"

namespace simprof {

/// One kernel name's figures over a whole trace.
struct KernelStat {
  /// The kernel's name.
  std::string name;
  /// Launches of it in the trace.
  std::uint64_t calls = 0;
  ///@{
  /// Its summed, mean, shortest and longest duration, microseconds.
  double total_us = 0, mean_us = 0, min_us = 0, max_us = 0;
  ///@}
  double share = 0;  ///< of all kernel time in the trace
};

/// A stage's device work in one step: the kernels launched inside its host span, on its thread.
struct StageGpu {
  std::string name;         ///< the stage's name
  std::size_t kernels = 0;  ///< kernels launched inside it
  /// Its runs' device spans (first kernel start to last kernel end), summed over its runs in the
  /// step as the host sums their durations; 0 when it launched no kernel.
  double gpu_span_us = 0;
};

/// One traced step: its host span against its kernels' GPU time, gaps and launch latency.
struct StepAnalysis {
  /// The step's index in the trace session.
  std::uint64_t step = 0;
  /// Kernels run in the step.
  std::size_t kernels = 0;
  double host_us = 0;  ///< the step's host span
  /// First kernel start to last kernel end (simprof run: the step range's device work, its events'
  /// cost taken off).
  double gpu_span_us = 0;
  ///@{
  /// The first kernel start and the last kernel end, in the trace's nanoseconds (0: no kernel).
  std::int64_t gpu_begin_ns = 0, gpu_end_ns = 0;
  ///@}
  /// The step's stages that ran (its CPU stage spans), each with the kernels launched inside it.
  std::vector<StageGpu> stages;
  double gpu_busy_us = 0;  ///< union of kernel intervals
  double idle_us = 0;      ///< gaps between kernels inside the span
  /// The longest gap between two kernels inside the span.
  double max_gap_us = 0;
  ///@{
  /// API call start -> kernel start, median and 99th percentile.
  double launch_latency_p50_us = 0, launch_latency_p99_us = 0;  ///< API call start -> kernel start
  ///@}
  /// True when the GPU idled more than it computed inside the step: launches, not kernels, set the
  /// pace.
  bool launch_bound = false;
  double predicted_graph_us = 0;  ///< busy + kernels x per-node cost, when launch-bound
  /// Communication kernels (names starting "nccl", as HTA classes them): their busy time, and the
  /// share of it that overlapped computation kernels (HTA's comp/comm overlap; NaN without any).
  double comm_us = 0;
  /// The share of comm_us that overlapped computation kernels (NaN without communication).
  double comm_overlap = 0;
};

/// What analyze() finds in a trace: per-step figures, a kernel table and a launch-bound verdict.
struct TraceAnalysis {
  /// One entry per traced step, in order.
  std::vector<StepAnalysis> steps;
  std::vector<KernelStat> kernels;  ///< by total time, descending
  /// The kernels grouped by the stage their graph node was captured in (KernelPayload::stage; the
  /// kernels of replayed graphs, which a launch's correlation cannot place in a stage), by total
  /// time, descending; "(no stage)" collects the rest. Empty when no kernel has a stage.
  std::vector<KernelStat> stages;
  bool launch_bound = false;  ///< most traced steps are
  std::string verdict;        ///< one paragraph
  /// The verdict, a per-step table, the kernel table and, when kernels have stages, the stage
  /// table.
  std::string report(std::size_t top_kernels = 15) const;
};

/// `graph_node_us`: device cost of a kernel node inside a replayed graph, for the prediction (the
/// default is an empty kernel's in a 100-node graph: docs/tracing.md). A step is launch-bound when
/// the GPU is idle for more than half of its span.
TraceAnalysis analyze(const Trace& trace, double graph_node_us = 0.51);

}  // namespace simprof
