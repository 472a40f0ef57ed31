// SPDX-License-Identifier: MIT
// `simprof run --gpu`: step and stage times on the GPU's clock. Once the program has a CUDA
// context, the device side (DeviceSide) samples windows of two consecutive steps (Sampling),
// timing the work each range launched on the streams it went to; the windows fill a DeviceTable,
// and the device ends of their steps drive the FPS line. With --trace-steps the trace's window gets
// its kernels through CUPTI, and sampling pauses while it records. Private to src/run.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "../record/run_json.hpp"
#include "device_side.hpp"
#include "device_table.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/trace/session.hpp"

namespace simprof::run {

/// --gpu (SIMPROF_RUN_GPU): on where the program starts CUDA (auto), asked for (on), or off.
enum class GpuMode { kAuto, kOn, kOff };

class RangeDevice {
 public:
  RangeDevice(StepProfiler& prof, GpuMode mode, Sampling sampling);
  ~RangeDevice();
  RangeDevice(const RangeDevice&) = delete;
  RangeDevice& operator=(const RangeDevice&) = delete;

  /// Between steps, on the step's thread (listeners attach only there): starts the device side once
  /// the program has a CUDA context; gives `traced` (the --trace-steps session, or null) the
  /// kernels of its window. A failure turns the device side off (said in report()); nothing
  /// reaches the caller.
  void step(TraceSession* traced) noexcept;
  /// The step range changed: the figures so far were another range's; the next step() starts them
  /// anew (and joins the new --trace-steps session).
  void restart() noexcept;
  /// At exit, on the step's thread: the windows the GPU has passed are read (none is waited for).
  void finish() noexcept;
  /// The device table and what it is over, or why there is none ("" when --gpu is off).
  std::string report() const;
  /// The record's "device" object (null when --gpu is off).
  record::Json json() const;

 private:
  void start();
  void window(const TraceAnalysis& steps);  // a sampled window (the step's thread)
  void trace_window(TraceSession* traced);  // --trace-steps: its kernels, sampling paused
  bool restart_ = false;
  bool trace_joined_ = false, trace_done_ = false, trace_late_ = false;
  StepProfiler& prof_;
  GpuMode mode_;
  Sampling sampling_;
  std::unique_ptr<DeviceSide> side_;
  std::string off_;  // why the device clock is off ("": on, or not tried yet)
  // How the launches were seen ("hook", "cupti"; "": the device side never started), and where
  // auto chose CUPTI, why not the hook (the device side's reason, or simprof run's).
  std::string launches_, hook_unused_;
  cuda::EventCost event_cost_;  // what the events cost (taken off where measured)
  std::uint64_t checked_ = 0;   // steps seen while waiting for a CUDA context
  FpsTracker::DeviceClockClaim fps_;
  mutable std::mutex mu_;  // the table: read by the report's and the record's threads
  DeviceTable table_;
};

}  // namespace simprof::run
