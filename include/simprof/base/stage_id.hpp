// SPDX-License-Identifier: MIT
// StageId: the dense index by which a StepProfiler, its listeners and the trace model name a stage
// (StepProfiler::stage_id() gives it; stage_name() turns it back into the name).
#pragma once

#include <cstdint>

namespace simprof {

/// Dense index of a stage inside one StepProfiler (see StepProfiler::stage_id()).
using StageId = std::uint32_t;
/// No stage: what a lookup of an unknown name returns.
inline constexpr StageId kNoStage = ~StageId{0};
/// The whole step call, pre-step callbacks included.
inline constexpr StageId kStepStage = 0;
/// From the previous step's start to this one's: its inverse is the real loop rate.
inline constexpr StageId kPeriodStage = 1;

}  // namespace simprof
