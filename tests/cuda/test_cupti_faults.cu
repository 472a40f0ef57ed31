// SPDX-License-Identifier: MIT
// CUPTI lost mid-run (its activity calls made to fail through cupti_interpose.cpp): the simulation
// runs on, one warning says so, and every later window is still handed over with its CPU stages,
// its otherData saying why its kernels are missing. Nothing throws into the step loop.
#include <gtest/gtest.h>

#include <string>

#include "cupti_interpose.hpp"
#include "gpu_test.hpp"
#include "trace_test.hpp"

using namespace simprof;
using namespace simprof::cuda;
namespace gt = simprof::cuda::gputest;
namespace cf = simprof::cuda::cuptifault;

namespace {

std::size_t count(const Trace& t, SpanKind kind) {
  std::size_t n = 0;
  for (const Span& s : t.spans) n += s.kind == kind;
  return n;
}

class CuptiLost : public gt::GpuTest {
 protected:
  void TearDown() override { cf::disarm(); }

  // Two steps per window, four windows back to back; `lose` is armed before step `at`.
  void run(cf::Call lose, int at) {
    Stream stream;
    DeviceBuffer<float> x(256);
    x.fill_zero(stream);
    StepProfiler prof(gt::quiet(), 0);
    gt::KernelTraceSession kt(prof, Schedule{0, 0, 2, 4, 0});
    SIMPROF_REQUIRE_CUPTI(kt.tracer);
    for (int i = 0; i < 8; ++i) {
      if (i == at) cf::arm(lose);
      auto step = prof.step();
      auto st = prof.stage("physics");
      gt::axpb(x.data(), 256, 1.0f, stream);
      ++steps_;
    }
    stream.synchronize();
    traces_ = kt.traces;
    reason_ = kt.tracer.disabled_reason();
    enabled_ = kt.tracer.enabled();
  }

  simprof::testing::SimprofLog log_;
  int steps_ = 0;
  std::vector<Trace> traces_;
  std::string reason_;
  bool enabled_ = true;
};

}  // namespace

TEST_F(CuptiLost, AtAWindowsStartTheRestRunsUntracedWithOneWarning) {
  run(cf::kActivityEnable, 2);  // window 1 begins at step 2
  if (IsSkipped()) return;
  EXPECT_EQ(steps_, 8) << "the simulation ran on";
  EXPECT_GE(cf::failed(), 1);
  EXPECT_FALSE(enabled_);
  EXPECT_NE(reason_.find("cuptiActivityEnable"), std::string::npos) << reason_;
  EXPECT_EQ(log_.count("kernel tracing is off"), 1) << log_.str();
  ASSERT_EQ(traces_.size(), 4u) << "every window handed over";
  EXPECT_EQ(count(traces_[0], SpanKind::kKernel), 2u) << "the window before the loss is whole";
  EXPECT_EQ(traces_[0].metadata.count("kernel_tracing"), 0u);
  for (std::size_t w = 1; w < 4; ++w) {
    EXPECT_EQ(count(traces_[w], SpanKind::kKernel), 0u) << w;
    EXPECT_EQ(count(traces_[w], SpanKind::kCpuStage), 4u) << "2 steps, 2 stages each: " << w;
    EXPECT_EQ(traces_[w].metadata["kernel_tracing"], "off: " + reason_) << w;
  }
}

TEST_F(CuptiLost, InsideAWindowItsSpansSoFarAreKeptAndTheRestSaid) {
  run(cf::kActivityFlushAll, 3);  // window 1's flush, at its end (step 3), fails
  if (IsSkipped()) return;
  EXPECT_EQ(steps_, 8);
  EXPECT_FALSE(enabled_);
  EXPECT_NE(reason_.find("cuptiActivityFlushAll"), std::string::npos) << reason_;
  EXPECT_EQ(log_.count("kernel tracing is off"), 1) << log_.str();
  ASSERT_EQ(traces_.size(), 4u);
  EXPECT_EQ(count(traces_[0], SpanKind::kKernel), 2u);
  for (std::size_t w = 1; w < 4; ++w) {
    EXPECT_EQ(count(traces_[w], SpanKind::kCpuStage), 4u) << w;
    EXPECT_EQ(traces_[w].metadata["kernel_tracing"], "off: " + reason_) << w;
  }
  for (std::size_t w = 2; w < 4; ++w) EXPECT_EQ(count(traces_[w], SpanKind::kKernel), 0u) << w;
}
