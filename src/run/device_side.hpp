// SPDX-License-Identifier: MIT
// The CUDA half of `simprof run --gpu`, made on the step's thread once the program has a CUDA
// context: a listener of the profiler that samples windows of two consecutive steps (Sampling) with
// the CUDA backend's LaunchScopes (each range's launches stamped with events on the
// streams they went to), and hands each window, once the GPU passed it, to a sink as analyze()
// would give a trace's steps. A --trace-steps window gets its kernels through CUPTI's activity
// records (the KernelTracer). Built with CUDA in device_side_cuda.cpp; without,
// device_side_none.cpp says why not. Private to src/run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "device_table.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/trace/analysis.hpp"
#include "simprof/trace/session.hpp"

namespace simprof::run {

class DeviceSide {
 public:
  /// A window's steps: each step's device span (gpu_begin_ns, gpu_end_ns on one timebase across
  /// windows) and its work and its stages' (gpu_span_us: the span less its events' cost). Called
  /// on the step's thread.
  using Sink = std::function<void(const TraceAnalysis&)>;
  virtual ~DeviceSide() = default;
  /// Why the launches cannot be seen (another tool holds CUPTI, ...); empty while they can.
  virtual std::string disabled_reason() const = 0;
  /// How the launches are seen: "hook" or "cupti"; and, where auto chose CUPTI, why not the hook.
  virtual const char* launches() const = 0;
  virtual std::string hook_unused_reason() const = 0;
  /// What a range's two events and each event nested in it cost the stream (ns; measured once per
  /// device), taken off the ranges' device times; where not measured, why (nothing is taken off).
  virtual cuda::EventCost event_cost() const = 0;
  /// The kernels of `session`'s windows through CUPTI (made at the first call); leave_trace() ends
  /// it. Between steps.
  virtual void join_trace(TraceSession& session) = 0;
  virtual void leave_trace() noexcept = 0;
  /// No sampled windows while paused (a window armed is ended).
  virtual void pause(bool paused) noexcept = 0;
  /// Hands on the windows the GPU has passed (at every step's start; at exit). Never waits.
  virtual void poll() noexcept = 0;
  /// Windows not sampled (the GPU that far behind), dropped (events ran out, CUDA failed), and
  /// launches into a stream being captured (not stamped).
  virtual std::uint64_t skipped() const = 0;
  virtual std::uint64_t dropped() const = 0;
  virtual std::uint64_t capturing_launches() const = 0;
};

/// Whether this build has CUDA (device_side_cuda.cpp).
bool built_with_cuda() noexcept;

/// Whether the program has started CUDA: the calling thread has a current context. Never starts
/// CUDA itself; false in a build without CUDA.
bool has_cuda_context() noexcept;

/// The device side of `prof`'s steps, made between steps on the step's thread (it attaches to
/// `prof`); null, with `why`, when this build has no CUDA.
std::unique_ptr<DeviceSide> make_device_side(StepProfiler& prof, Sampling sampling,
                                             DeviceSide::Sink sink, std::string& why);

}  // namespace simprof::run
