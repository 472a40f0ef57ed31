// SPDX-License-Identifier: MIT
// The stages both engines report, registered once per profiler: the Genesis names a user expects.
#pragma once

#include "simprof/profiler/step_profiler.hpp"

namespace simprof::engine {

struct EngineStages {
  StepProfiler* prof = nullptr;
  StageId physics = kNoStage, forces = kNoStage, contacts = kNoStage, integrate = kNoStage,
          imu = kNoStage, rendering = kNoStage, recorders = kNoStage;

  void attach(StepProfiler& p) {
    prof = &p;
    physics = p.stage_id("physics");
    forces = p.stage_id("physics/forces");
    contacts = p.stage_id("physics/contacts");
    integrate = p.stage_id("physics/integrate");
    imu = p.stage_id("sensors/Imu");
    rendering = p.stage_id("rendering");
    recorders = p.stage_id("recorders");
  }
};

}  // namespace simprof::engine
