// SPDX-License-Identifier: MIT
// NvtxRanges: the profiler's steps and stages as NVTX push/pop ranges in their own domain, with
// registered strings, for Nsight Systems and Nsight Compute.
//
/* clang-format off */
//   simprof::cuda::NvtxRanges nvtx(prof);   // ranges "step", then each stage's name, in domain "simprof"
//   // ncu --nvtx --nvtx-include "simprof@physics/" ./my_engine   -> only the physics stage's kernels
/* clang-format on */
//
// Compiled out completely with -DSIMPROF_NVTX=OFF (SIMPROF_NVTX_DISABLED): the class stays, empty,
// so user code builds unchanged. With no tool attached an NVTX call is a load and a branch.
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "simprof/profiler/step_profiler.hpp"

#if !defined(SIMPROF_NVTX_DISABLED)
#include <nvtx3/nvToolsExt.h>
#endif

namespace simprof::cuda {

/// The profiler's steps and stages as NVTX push/pop ranges in a domain of their own, for Nsight
/// Systems and Nsight Compute (an empty no-op with SIMPROF_NVTX_DISABLED).
class NvtxRanges : public StepListener {
 public:
  /// Attaches to `prof`; ranges go to the NVTX domain named `domain`.
  explicit NvtxRanges(StepProfiler& prof, const char* domain = "simprof");
  ~NvtxRanges() override;
  NvtxRanges(const NvtxRanges&) = delete;
  NvtxRanges& operator=(const NvtxRanges&) = delete;

  void on_step_begin(std::uint64_t step, std::int64_t ticks) override;
  void on_stage_begin(StageId id, std::int64_t ticks) override;
  void on_stage_end(StageId id, std::int64_t ticks) override;
  void on_step_end(std::uint64_t step, std::int64_t ticks, StepOutcome outcome) override;
  bool wants_worker_zones() const noexcept override { return false; }

 private:
  StepProfiler& prof_;
#if !defined(SIMPROF_NVTX_DISABLED)
  void push(StageId id);
  struct DomainDestroy {
    void operator()(nvtxDomainHandle_t d) const noexcept { nvtxDomainDestroy(d); }
  };
  std::unique_ptr<std::remove_pointer_t<nvtxDomainHandle_t>, DomainDestroy> domain_;
  std::vector<nvtxStringHandle_t> names_;  // registered once per stage
#endif
  ListenerAttachment attached_;  // last: the first to go, so no call reaches a half-gone listener
};

}  // namespace simprof::cuda
