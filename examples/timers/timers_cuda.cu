// SPDX-License-Identifier: MIT
#include <optional>

#include "demo_engine/cuda_engine.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/device_timer_buffer.hpp"
#include "timer_run.hpp"

namespace simprof::examples {

namespace {
class CudaRun final : public TimerRun {
 public:
  CudaRun(const engine::Params& p, int n, StepProfiler& prof)
      : engine_(p, n, stream_), timers_({"solve", "forces", "contacts", "integrate"}, n) {
    engine_.attach(prof);
    view_ = timers_.view();
  }
  void set_targets(const std::vector<float>& t) override { engine_.set_targets(t, stream_); }
  void step() override {
    engine_.enqueue_solver(stream_, &view_);
    engine_.enqueue_sensors(stream_);
    timers_.read_async(stream_);  // copied out behind the step; read when it has finished
  }
  std::optional<TimerFrame> latest() override { return timers_.latest(); }
  void finish() override { stream_.synchronize(); }
  const char* unit() const override { return "SM cycles / nominal clock"; }

 private:
  cuda::Stream stream_;
  engine::CudaEngine engine_;
  cuda::DeviceTimerBuffer timers_;
  TimerView view_;
};
}  // namespace

std::unique_ptr<TimerRun> make_cuda_run(const engine::Params& params, int n_envs,
                                        StepProfiler& prof) {
  return std::make_unique<CudaRun>(params, n_envs, prof);
}

}  // namespace simprof::examples
