// SPDX-License-Identifier: MIT
// Shared pieces of the GPU tracing tests: a trace session whose source is a kernel tracer, keeping
// every trace it finishes.
#pragma once

#include <gtest/gtest.h>

#include <cupti.h>

#include <string>
#include <vector>

#include "simprof/cuda/trace/kernel_tracer.hpp"
#include "simprof/trace/causality.hpp"
#include "simprof/trace/session.hpp"
#include "test_util.hpp"

namespace simprof::cuda::gputest {

/// CUPTI's own answer: another subscriber (compute-sanitizer, Nsight, a profiler) holds it now.
inline bool cupti_held_by_another_tool() {
  CUpti_SubscriberHandle probe = nullptr;
  const CUptiResult r = cuptiSubscribe(
      &probe, [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}, nullptr);
  if (r == CUPTI_SUCCESS) cuptiUnsubscribe(probe);
  return r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
}

}  // namespace simprof::cuda::gputest

// A tracer (or DeviceAllocations: anything with enabled() and disabled_reason()) that could not
// subscribe because another tool holds CUPTI (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, asked
// of CUPTI itself): the test skips and says so. Any other reason (privileges, version, a failure
// after subscribing) is a failure.
#define SIMPROF_REQUIRE_CUPTI(tracer)                                                    \
  do {                                                                                   \
    if (!(tracer).enabled()) {                                                           \
      if ((tracer).disabled_reason().rfind("cuptiSubscribe failed", 0) == 0 &&           \
          ::simprof::cuda::gputest::cupti_held_by_another_tool())                        \
        GTEST_SKIP() << "CUPTI is held by another tool: " << (tracer).disabled_reason(); \
      FAIL() << (tracer).disabled_reason();                                              \
    }                                                                                    \
  } while (0)

namespace simprof::cuda::gputest {

using simprof::testing::quiet;

struct KernelTraceSession {
  TraceSession session;
  KernelTracer tracer;
  SourceRegistration joined;  // after the tracer: leaves the session first
  std::vector<Trace> traces;

  KernelTraceSession(StepProfiler& prof, Schedule schedule, KernelTracerOptions options = {})
      : KernelTraceSession(prof, with_schedule(schedule), options) {}
  /// With the session's options (TraceOptions::background: traces are kept on its writer thread,
  /// read them after session.wait()).
  KernelTraceSession(StepProfiler& prof, const TraceOptions& trace_options,
                     KernelTracerOptions options = {})
      : session(prof, trace_options), tracer(prof, options) {
    joined = session.add_source(&tracer);
    session.on_trace_ready([this](const Trace& t, std::uint64_t window) {
      // Every trace a GPU test writes is one the device could have run (trace/causality.hpp).
      const CausalityReport physics = check_causality(t);
      EXPECT_TRUE(physics.ok()) << "window " << window << ": " << physics.summary();
      traces.push_back(t);
    });
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
