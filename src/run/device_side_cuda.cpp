// SPDX-License-Identifier: MIT
// The device side through the CUDA backend: LaunchScopes for the sampled windows (events on the
// streams each range launched to, no activity records), the KernelTracer for a --trace-steps
// window's kernels.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <utility>
#include <vector>

#include "device_side.hpp"
#include "device_table.hpp"
#include "simprof/cuda/trace/kernel_tracer.hpp"
#include "simprof/cuda/trace/launch_scopes.hpp"
#include "simprof/profiler/listener.hpp"

namespace simprof::run {

namespace {

cuda::LaunchScopesOptions scope_options(const Sampling& sampling) {
  cuda::LaunchScopesOptions o;
  o.source = sampling.launches;
  return o;
}

cuda::KernelTracerOptions tracer_options() {
  cuda::KernelTracerOptions o;
  o.memory = false;
  o.synchronization = false;
  return o;
}

class ScopeSide final : public DeviceSide, public StepListener {
 public:
  ScopeSide(StepProfiler& prof, Sampling sampling, Sink sink)
      : prof_(prof),
        schedule_(sampling, prof.clock().ticks_per_second()),
        sink_(std::move(sink)),
        scopes_(scope_options(sampling)) {
    if (scopes_.enabled()) attached_ = prof.attach(*this);
  }

  std::string disabled_reason() const override { return scopes_.disabled_reason(); }
  const char* launches() const override { return launches_name(scopes_.source()); }
  std::string hook_unused_reason() const override { return scopes_.hook_unused_reason(); }
  cuda::EventCost event_cost() const override { return scopes_.event_cost(); }
  void join_trace(TraceSession& session) override {
    if (!tracer_) tracer_ = std::make_unique<cuda::KernelTracer>(prof_, tracer_options());
    traced_ = session.add_source(tracer_.get());
  }
  void leave_trace() noexcept override { traced_.reset(); }
  void pause(bool paused) noexcept override {
    paused_ = paused;
    if (paused_ && scopes_.armed()) scopes_.disarm();
  }
  std::uint64_t skipped() const override { return scopes_.skipped(); }
  std::uint64_t dropped() const override {
    return scopes_.dropped() + lost_ + (tracer_ ? tracer_->dropped() : 0);
  }
  std::uint64_t capturing_launches() const override { return scopes_.capturing_launches(); }

  // A window is two consecutive steps (WindowSchedule); the step is the outermost scope.
  void on_step_begin(std::uint64_t step, std::int64_t ticks) override {
    poll();
    if (!scopes_.armed() && !paused_ && schedule_.opens(step, ticks)) scopes_.arm(step);
    scopes_.open(static_cast<std::int32_t>(kStepStage));
  }
  void on_stage_begin(StageId id, std::int64_t) override {
    scopes_.open(static_cast<std::int32_t>(id));
  }
  void on_stage_end(StageId, std::int64_t) override { scopes_.close(); }
  void on_step_end(std::uint64_t step, std::int64_t, StepOutcome) override {
    scopes_.close();
    if (schedule_.closes(step)) scopes_.disarm();
  }

 private:
  void poll() noexcept override {
    try {
      scopes_.poll(windows_);
      const auto name = [this](std::int32_t id) {
        return std::string(prof_.stage_name(static_cast<StageId>(id)));
      };
      for (const cuda::LaunchWindow& w : windows_) sink_(steps_(w, name));
    } catch (...) {  // out of memory: those windows are lost (a listener never throws)
      ++lost_;
    }
    windows_.clear();
  }

  StepProfiler& prof_;
  WindowSchedule schedule_;
  Sink sink_;
  cuda::LaunchScopes scopes_;
  std::vector<cuda::LaunchWindow> windows_;
  WindowSteps steps_;
  std::atomic<std::uint64_t> lost_{0};  // windows lost converting them
  bool paused_ = false;
  std::unique_ptr<cuda::KernelTracer> tracer_;
  SourceRegistration traced_;    // after the tracer: leaves first
  ListenerAttachment attached_;  // last: detached before the rest goes
};

}  // namespace

bool built_with_cuda() noexcept { return true; }

bool has_cuda_context() noexcept {
  // The driver is loaded by the program's CUDA runtime when it starts CUDA: not loaded, no context.
  // Called on the step's thread only (under the session's lock).
  static void* driver = nullptr;
  if (driver == nullptr) driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (driver == nullptr) return false;
  using GetCurrent = int (*)(void**);
  static const auto get = reinterpret_cast<GetCurrent>(dlsym(driver, "cuCtxGetCurrent"));
  void* context = nullptr;
  return get != nullptr && get(&context) == 0 && context != nullptr;
}

std::unique_ptr<DeviceSide> make_device_side(StepProfiler& prof, Sampling sampling,
                                             DeviceSide::Sink sink, std::string&) {
  return std::make_unique<ScopeSide>(prof, sampling, std::move(sink));
}

}  // namespace simprof::run
