// SPDX-License-Identifier: MIT
// Shared pieces of the GPU tracing tests: a trace session whose source is a kernel tracer, keeping
// every trace it finishes.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "simprof/cuda/kernel_tracer.hpp"
#include "simprof/trace/session.hpp"
#include "test_util.hpp"

// A tracer (or DeviceAllocations: anything with enabled() and disabled_reason()) without CUPTI
// because another tool holds it (compute-sanitizer, Nsight): the test skips and says so. Any other
// reason is a failure.
#define SIMPROF_REQUIRE_CUPTI(tracer)                                                    \
  do {                                                                                   \
    if (!(tracer).enabled()) {                                                           \
      if ((tracer).disabled_reason().find("cuptiSubscribe") != std::string::npos)        \
        GTEST_SKIP() << "CUPTI is held by another tool: " << (tracer).disabled_reason(); \
      FAIL() << (tracer).disabled_reason();                                              \
    }                                                                                    \
  } while (0)

namespace simprof::cuda::gputest {

using simprof::testing::quiet;

struct KernelTraceSession {
  TraceSession session;
  KernelTracer tracer;
  std::vector<Trace> traces;

  KernelTraceSession(StepProfiler& prof, Schedule schedule, KernelTracerOptions options = {})
      : session(prof, with_schedule(schedule)), tracer(prof, options) {
    session.add_source(&tracer);
    session.on_trace_ready([this](const Trace& t, std::uint64_t) { traces.push_back(t); });
  }
  /// The latest trace (an empty one before the first).
  Trace last() const { return traces.empty() ? Trace{} : traces.back(); }

 private:
  static TraceOptions with_schedule(Schedule s) {
    TraceOptions o;
    o.schedule = s;
    return o;
  }
};

}  // namespace simprof::cuda::gputest
