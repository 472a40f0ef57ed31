// SPDX-License-Identifier: MIT
// StepTools: measuring tools a backend hangs on a StepProfiler, owned by it. The profiler destroys
// them first when it goes (so they may still detach from it), and while one of its steps is open
// on a thread, code running in that step finds them through StepProfiler::tools_in_step(): that is
// how a graph cache stepped under a profiler gets the profiler's stamps with no wiring of its own.
// cuda::GpuProfile is the tools of the CUDA backend.
#pragma once

#include <cstdint>

namespace simprof {

/// The base of a backend's tools (see the header comment).
class StepTools {
 public:
  StepTools() noexcept;
  virtual ~StepTools() = default;
  StepTools(const StepTools&) = delete;
  StepTools& operator=(const StepTools&) = delete;
  /// Unique for the process's life (an address may be reused; this is not).
  std::uint64_t serial() const noexcept { return serial_; }

 private:
  std::uint64_t serial_;
};

}  // namespace simprof
