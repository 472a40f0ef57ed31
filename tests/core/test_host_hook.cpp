// SPDX-License-Identifier: MIT
// SIMPROF_COUNT_HOST_ALLOCATIONS(): the opt-in host hook, installed in this binary only; a stage
// that builds a vector shows its allocations in the tracker's host columns.
#include <gtest/gtest.h>

#include <vector>

#include "simprof/memory/host_hook.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "test_util.hpp"

SIMPROF_COUNT_HOST_ALLOCATIONS();

using namespace simprof;

TEST(HostHook, CountsTheHeapPerStage) {
  StepProfiler prof(simprof::testing::quiet(), 0);
  MemoryTracker mem(prof, nullptr, &host_allocations());
  for (int i = 0; i < 10; ++i) {
    auto step = prof.step();
    {
      auto s = prof.stage("sensors");
      std::vector<double> v(1000);
      v[0] = i;
    }
    auto p = prof.stage("physics");
  }
  EXPECT_TRUE(host_allocations().hooked());
  EXPECT_DOUBLE_EQ(mem.allocs_per_step("sensors", MemorySide::kHost), 1.0);
  EXPECT_DOUBLE_EQ(mem.bytes_per_step("sensors", MemorySide::kHost), 8000.0);
  EXPECT_EQ(mem.total("sensors", MemorySide::kHost).frees, 10u);
  EXPECT_DOUBLE_EQ(mem.allocs_per_step("physics", MemorySide::kHost), 0.0)
      << "the profiler's own hot path allocates nothing";
}
