// SPDX-License-Identifier: MIT
// The tools a StepProfiler owns, and those of the step open on this thread (step_tools.hpp).
#include <atomic>
#include <stdexcept>

#include "simprof/profiler/step_profiler.hpp"

namespace simprof {

namespace {
std::atomic<std::uint64_t> g_tools_serial{0};
thread_local StepTools* t_step_tools = nullptr;
}  // namespace

StepTools::StepTools() noexcept : serial_(g_tools_serial.fetch_add(1) + 1) {}

void StepProfiler::own_tools(std::shared_ptr<StepTools> tools) {
  if (!tools) throw std::invalid_argument("simprof: StepProfiler::own_tools(null)");
  if (tools_)
    throw std::logic_error(
        "simprof: StepProfiler::own_tools: this profiler owns tools already (one owner: release "
        "them first)");
  tools_ = std::move(tools);
  if (in_step_) enter_step_tools();
}

void StepProfiler::release_tools(const StepTools* tools) noexcept {
  if (tools == nullptr || tools != tools_.get()) return;
  leave_step_tools();
  const std::shared_ptr<StepTools> gone = std::move(tools_);  // destroyed with tools_ empty
}

StepTools* StepProfiler::tools_in_step() noexcept { return t_step_tools; }

void StepProfiler::enter_step_tools() noexcept {
  if (!tools_ || step_tools_set_) return;
  t_step_tools = tools_.get();
  step_tools_set_ = true;
}

// Only this profiler's own tools are taken back, and nothing is put back in their place: a pointer
// saved from an enclosing step could outlive its tools (steps of two profilers need not end in the
// reverse order they began, and either profiler may give its tools up meanwhile).
void StepProfiler::leave_step_tools() noexcept {
  if (!step_tools_set_) return;
  if (t_step_tools == tools_.get()) t_step_tools = nullptr;
  step_tools_set_ = false;
}

}  // namespace simprof
