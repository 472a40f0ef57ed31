// SPDX-License-Identifier: MIT
// cuda::Stopwatch, the examples' and benchmarks' one way to time a section of GPU work: a section
// of known device length (a spin kernel) reads the same however much work was queued before it, on
// both clocks; device laps are read lazily; a section may end on another stream; misuse is named.
// The host-clock control shows what the examples got wrong before (mixed_precision's "validation"
// counted 50 queued replays).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "gpu_test.hpp"
#include "simprof/cuda/timing/stopwatch.hpp"
#include "test_util.hpp"

using namespace simprof;
using namespace simprof::cuda;
namespace gt = simprof::cuda::gputest;
using gt::GpuTest;

namespace {

constexpr unsigned long long kQueuedNs = 200'000;   // one queued step
constexpr unsigned long long kSectionNs = 100'000;  // the measured section
constexpr double kSection = kSectionNs * 1e-9;

class StopwatchTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;  // no GPU: nothing CUDA may be made (CI has no driver)
    stream_ = std::make_unique<Stream>();
    back_ = std::make_unique<DeviceBuffer<unsigned long long>>(1);
    back_->fill_zero(stream());  // read back below: initialised (compute-sanitizer's initcheck)
    gt::spin(1000, stream());    // load the module before anything is timed
    gt::sync(stream());
  }
  Stream& stream() { return *stream_; }
  // Queues `n` steps, then times a section that spins kSectionNs and reads a value back to the
  // host (the shape of mixed_precision's validation). Returns the lap; `host_s` receives what a
  // host stopwatch started at the same point read.
  double section_after(Stopwatch& w, int n, double* host_s = nullptr) {
    for (int i = 0; i < n; ++i) gt::spin(kQueuedNs, stream());
    const auto t0 = std::chrono::steady_clock::now();
    {
      auto lap = w.lap();
      gt::spin(kSectionNs, stream());
      unsigned long long h = 0;
      back_->copy_to_host(&h, 1, stream());
      gt::sync(stream());
    }
    if (host_s)
      *host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return w.last_s();
  }
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<DeviceBuffer<unsigned long long>> back_;
};

TEST_F(StopwatchTest, DeviceLapIgnoresWorkQueuedBeforeIt) {
  Stopwatch w(stream());
  EXPECT_STREQ(w.clock_label(), "CUDA events");
  const double alone = section_after(w, 0);
  double host = 0;
  const double queued = section_after(w, 20, &host);
  EXPECT_GE(alone, kSection);
  EXPECT_GE(queued, kSection);
  // The same section, 4 ms of queued steps or none: within a quarter of its length.
  SIMPROF_TIMING EXPECT_NEAR(queued, alone, kSection / 4)
      << "alone " << alone << " s, queued " << queued << " s";
  // The control: a host stopwatch started at the same point counts the queued steps.
  EXPECT_GE(host, 20 * kQueuedNs * 1e-9);
  EXPECT_EQ(w.laps(), 2u);
  EXPECT_NEAR(w.total_s(), alone + queued, 1e-9);
}

TEST_F(StopwatchTest, DrainedHostLapIgnoresWorkQueuedBeforeIt) {
  Stopwatch w(stream(), StopwatchClock::kHostDrained);
  EXPECT_STREQ(w.clock_label(), "host clock, stream drained");
  const double queued = section_after(w, 20);
  EXPECT_GE(queued, kSection);
  SIMPROF_TIMING EXPECT_LT(queued, 20 * kQueuedNs * 1e-9) << "the queued steps were counted";
}

TEST_F(StopwatchTest, DeviceLapsAreReadLazily) {
  Stopwatch w(stream(), StopwatchClock::kDevice, /*pending=*/2);
  gt::Gate gate;
  gate.hold(stream());  // nothing below completes before the gate opens
  for (int i = 0; i < 5; ++i) {
    if (i == 2) gate.open();  // the third start() waits for the first lap: let it finish
    auto lap = w.lap();
    gt::spin(50'000, stream());
  }
  EXPECT_EQ(w.laps(), 5u);
  EXPECT_GE(w.last_s(), 50e-6);
  EXPECT_GE(w.total_s(), 5 * 50e-6);
  EXPECT_NEAR(w.mean_s(), w.total_s() / 5, 1e-12);
  w.reset();
  EXPECT_EQ(w.laps(), 0u);
  EXPECT_EQ(w.total_s(), 0.0);
  EXPECT_EQ(w.mean_s(), 0.0);
}

TEST_F(StopwatchTest, SectionMayEndOnAnotherStream) {
  Stream consumer;
  Event produced(cudaEventDisableTiming);
  Stopwatch w(stream());
  w.start();
  gt::spin(kSectionNs, stream());
  produced.record(stream());
  SIMPROF_CUDA_CHECK(cudaStreamWaitEvent(consumer, produced.get(), 0));
  gt::spin(kSectionNs, consumer);
  w.stop(consumer);
  EXPECT_GE(w.last_s(), 2 * kSection);
}

TEST_F(StopwatchTest, TimeRunsOneLap) {
  Stopwatch w(stream());
  const double s = w.time([&] { gt::spin(kSectionNs, stream()); });
  EXPECT_GE(s, kSection);
  EXPECT_EQ(w.laps(), 1u);
  EXPECT_EQ(s, w.last_s());
}

TEST_F(StopwatchTest, MisuseIsNamed) {
  EXPECT_EQ(simprof::testing::error_of<std::invalid_argument>(
                [&] { Stopwatch(stream(), StopwatchClock::kDevice, 0); }),
            "simprof: Stopwatch pending = 0 (expected >= 1 laps read lazily)");
  Stopwatch w(stream());
  EXPECT_EQ(simprof::testing::error_of<std::logic_error>([&] { w.stop(); }),
            "simprof: Stopwatch::stop() without a running lap");
  w.start();
  EXPECT_EQ(simprof::testing::error_of<std::logic_error>([&] { w.start(); }),
            "simprof: Stopwatch::start() while a lap is running");
  EXPECT_EQ(simprof::testing::error_of<std::logic_error>([&] { w.reset(); }),
            "simprof: Stopwatch::reset() while a lap is running");
  w.stop();
  EXPECT_EQ(w.laps(), 1u);
  EXPECT_GE(w.last_s(), 0.0);
}

}  // namespace
