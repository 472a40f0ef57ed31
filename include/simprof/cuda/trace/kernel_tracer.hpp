// SPDX-License-Identifier: MIT
// KernelTracer: every kernel, copy, memset, runtime call and synchronisation of the traced steps,
// through CUPTI's activity API, as typed spans next to the CPU stages.
//
/* clang-format off */
//   simprof::TraceSession trace(prof, topt);           // see simprof/trace/session.hpp
//   simprof::cuda::KernelTracer kernels(prof);
//   auto joined = trace.add_source(&kernels);  // binds the tracer to the session's TimeBase
//   trace.on_trace_ready([](const simprof::Trace& t, std::uint64_t) {
//     simprof::write_chrome_trace(t, "step.json");
//     std::fputs(simprof::analyze(t).report().c_str(), stdout);   // launch-bound or GPU-bound?
//   });
/* clang-format on */
//
// One clock: the tracer registers CUPTI's timestamp callback with the session's TimeBase (the
// profiler's clock), so kernels and CPU stages line up in the trace without synchronising. CUPTI's
// callbacks are plain functions, so they reach the one tracer of the process through a single
// registration pointer; the clock itself is never copied into a global. Records come into a
// bounded pool of buffers; records CUPTI could not store are counted and reported, never silently
// lost. If CUPTI cannot be used (another profiler such as ncu holds it, or permissions), the tracer
// switches off with one warning and the simulation runs on unaffected.
//
// Kernels of a replayed graph appear one by one, with their graph and node ids and the stage their
// node was captured in (args "stage", "graph id", "graph node id"): CUPTI's resource callbacks tell
// the tracer of every graph node made while the profiler's loop thread (the one that made the
// tracer) has a stage open, and of every clone of it (cudaGraphClone, and each instantiation,
// whose nodes are the ones a replayed kernel names); a launch's correlation alone would place the
// whole graph in the stage that launched it. Graphs captured before the tracer existed, or on
// another thread, carry no stage; an executable updated in place (cudaGraphExecUpdate) keeps the
// stages of the graph it was instantiated from. analyze() groups the kernels by stage. Graph-launch
// mode writes one span per graph launch instead (its kernels merged); CUPTI's own GRAPH_TRACE
// activity would record that more cheaply but crashes CUPTI 13.0 (see docs/tracing.md), so the
// CUPTI cost of both modes is the same here; the trace is smaller.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "simprof/profiler/step_profiler.hpp"
#include "simprof/trace/session.hpp"
#include "simprof/trace/span.hpp"
#include "simprof/trace/time_base.hpp"

namespace simprof::cuda {

/// How a KernelTracer records a replayed graph: each of its kernels (kPerKernel), or one span per
/// graph launch with its kernels merged (kGraphLaunch).
enum class TraceMode { kPerKernel, kGraphLaunch };

/// What a KernelTracer records, and its CUPTI buffer pool.
struct KernelTracerOptions {
  /// One span per kernel, or per graph launch.
  TraceMode mode = TraceMode::kPerKernel;
  bool runtime_api = true;  ///< runtime calls (launches, graph launches, copies, syncs): flows
  /// Driver calls that launch device work ("cuda_driver": NCCL launches through cuLaunchKernelEx;
  /// without them its kernels have no launch and HTA drops them).
  bool driver_api = true;
  bool memory = true;           ///< memcpy and memset
  bool synchronization = true;  ///< stream/event/device synchronisations
  /// CUPTI's own overhead records. Off by default: they add a large share to a traced step's cost
  /// (docs/python.md has the figures).
  bool overhead = false;
  /// Register CUPTI's timestamp callback with the profiler's clock (one timebase for CPU stages and
  /// kernels). Off: CUPTI's own clock, and CPU stages are placed by an offset measured at start().
  bool align_clock = true;
  /// Bytes of each activity buffer handed to CUPTI.
  std::size_t buffer_bytes = std::size_t{4} << 20;
  std::size_t max_buffers = 64;  ///< the pool's bound; beyond it CUPTI drops (and counts) records
};

/// The device side of a trace: kernels, copies, memsets, runtime calls and synchronisations
/// recorded through CUPTI's activity API, as spans on the session's timebase.
class KernelTracer : public TraceSource {
 public:
  /// Timestamps on a TimeBase of `prof`'s clock until a session binds its own; `prof` (whose open
  /// stage tags the graph nodes captured on the calling thread) must outlive the tracer. One
  /// tracer per process (CUPTI has one subscriber): a second one throws std::logic_error. Never
  /// throws for CUPTI being unavailable: see enabled().
  explicit KernelTracer(const StepProfiler& prof, KernelTracerOptions options = {});
  ~KernelTracer() override;
  KernelTracer(const KernelTracer&) = delete;
  KernelTracer& operator=(const KernelTracer&) = delete;

  /// False when CUPTI could not be used; disabled_reason() says why (also logged once).
  bool enabled() const noexcept;
  /// Why CUPTI could not be used (empty when enabled()).
  const std::string& disabled_reason() const noexcept;
  /// Records lost so far (CUPTI's dropped-record counts and pool exhaustion).
  std::uint64_t dropped() const noexcept;

  /// Takes the session's timebase; std::logic_error inside a window.
  void bind(const TimeBase& time_base) override;
  void start() override;
  void discard() override;
  /// Marks the window's last launch; the loop goes on without waiting (see stop_and_collect()).
  void stop() override;
  /// Waits for the device (the window's work must be complete), then turns CUPTI's kinds off (never
  /// with work in flight: its records would be wrong), flushes CUPTI and converts the work launched
  /// inside the window (by correlation: the steps launched after it meanwhile are left out). Runs
  /// on the session's writer thread with TraceOptions::background (on the tracer's device).
  std::uint64_t stop_and_collect(std::vector<Span>& out) override;
  /// deviceProperties of the devices the last window ran on, and the CUDA and CUPTI versions.
  void describe(Trace& trace) const override;
  /// Its window is not collected: it no longer counts as tracing one (a GraphKernelTimer's windows
  /// stop leaving their spans to it). CUPTI's kinds go off when the tracer goes.
  void abandon() noexcept override;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace simprof::cuda
