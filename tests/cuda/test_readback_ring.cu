// SPDX-License-Identifier: MIT
// The stamping timers' ring of readings: read in the order sent, once arrived; a reading its
// reader is not ready for stays; a full ring says so. Their engine (StampRing): a step's record
// published beside the step or on its stream, the tag written by the stream.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "gpu_test.hpp"
#include "readback_ring.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "stamp_ring.hpp"

using namespace simprof::cuda;
using detail::Publish;
using detail::ReadbackRing;
using detail::StampRing;
using simprof::cuda::gputest::GpuTest;

namespace {

__global__ void write_value(unsigned long long* to, unsigned long long v) { *to = v; }

// A stamp as the stage stamps find their record: the tag the stream wrote names it.
__global__ void tagged_stamp(unsigned long long* records, const unsigned* tag, unsigned stride,
                             unsigned long long v) {
  if (*tag != detail::kNotTimed) records[*tag * stride] = v;
}

// A publish kernel as the stage timer's: the host names the step's record (the stream may have
// written the next step's tag by the time it runs).
__global__ void publish_record(const unsigned long long* records, unsigned k, unsigned stride,
                               unsigned long long* to) {
  to[0] = records[k * stride];
  to[1] = k;
}

// A stream's host function: returns once the test releases it (or after 10 s).
void CUDART_CB hold_until(void* released) {
  const auto& r = *static_cast<std::atomic<bool>*>(released);
  const auto t0 = std::chrono::steady_clock::now();
  while (!r.load() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10))
    std::this_thread::yield();
}

using Read = std::vector<std::pair<std::uint64_t, unsigned long long>>;  // step, value

}  // namespace

TEST_F(GpuTest, ReadingsAreReadInTheOrderSentWithWhatTheDeviceWrote) {
  Stream s;
  ReadbackRing ring(4, sizeof(unsigned long long));
  for (std::uint64_t step = 10; step < 13; ++step) {
    const std::size_t at = ring.next();
    write_value<<<1, 1, 0, s.get()>>>(ring.device<unsigned long long>(at), step * 7);
    ASSERT_EQ(ring.sent(s.get(), step), cudaSuccess);
  }
  EXPECT_EQ(ring.in_flight(), 3u);
  s.synchronize();
  Read got;
  ring.poll([&](std::size_t at, std::uint64_t step, bool arrived) {
    EXPECT_TRUE(arrived);
    got.emplace_back(step, *ring.host<unsigned long long>(at));
    return true;
  });
  EXPECT_EQ(got, (Read{{10, 70}, {11, 77}, {12, 84}}));
  EXPECT_EQ(ring.in_flight(), 0u);
  // The slots are reused, still in order: the fourth slot, then the first.
  for (std::uint64_t step = 13; step < 15; ++step) {
    write_value<<<1, 1, 0, s.get()>>>(ring.device<unsigned long long>(ring.next()), step);
    ASSERT_EQ(ring.sent(s.get(), step), cudaSuccess);
  }
  s.synchronize();
  got.clear();
  ring.poll([&](std::size_t at, std::uint64_t step, bool) {
    got.emplace_back(step, *ring.host<unsigned long long>(at));
    return true;
  });
  EXPECT_EQ(got, (Read{{13, 13}, {14, 14}}));
}

TEST_F(GpuTest, AReadingStillOnItsWayHoldsBackTheLaterOnes) {
  // No kernels: under compute-sanitizer kernels run one at a time, and a spinning one would hold
  // back the other stream's. The first reading's stream waits in a host function until released.
  Stream s, other;
  ReadbackRing ring(2, sizeof(unsigned long long));
  std::atomic<bool> release{false};
  *ring.host<unsigned long long>(0) = 1;
  ASSERT_EQ(cudaLaunchHostFunc(s.get(), hold_until, &release), cudaSuccess);
  ASSERT_EQ(ring.sent(s.get(), 1), cudaSuccess);
  *ring.host<unsigned long long>(1) = 2;
  ASSERT_EQ(ring.sent(other.get(), 2), cudaSuccess);
  other.synchronize();
  EXPECT_TRUE(ring.full());
  int reads = 0;
  ring.poll([&](std::size_t, std::uint64_t, bool) { return ++reads, true; });
  EXPECT_EQ(reads, 0) << "the second reading was read before the first";
  EXPECT_EQ(ring.in_flight(), 2u);
  release = true;
  s.synchronize();
  Read got;
  ring.poll([&](std::size_t at, std::uint64_t step, bool) {
    got.emplace_back(step, *ring.host<unsigned long long>(at));
    return true;
  });
  EXPECT_EQ(got, (Read{{1, 1}, {2, 2}}));
  EXPECT_FALSE(ring.full());
}

TEST_F(GpuTest, AReadingItsReaderIsNotReadyForStaysForTheNextPoll) {
  Stream s;
  ReadbackRing ring(2, 64);
  write_value<<<1, 1, 0, s.get()>>>(ring.device<unsigned long long>(ring.next()), 5);
  ASSERT_EQ(ring.sent(s.get(), 5), cudaSuccess);
  s.synchronize();
  int offered = 0;
  ring.poll([&](std::size_t, std::uint64_t, bool) { return ++offered, false; });
  EXPECT_EQ(offered, 1);
  EXPECT_EQ(ring.in_flight(), 1u);
  std::vector<cudaEvent_t> waits;
  ring.arrivals(waits, [](std::size_t) { return true; });
  EXPECT_EQ(waits.size(), 1u);
  ring.poll([&](std::size_t, std::uint64_t step, bool) { return ++offered, step == 5; });
  EXPECT_EQ(offered, 2);
  EXPECT_EQ(ring.in_flight(), 0u);
  waits.clear();
  ring.arrivals(waits, [](std::size_t) { return true; });
  EXPECT_TRUE(waits.empty());
}

TEST_F(GpuTest, BesideTheStepAPublicationCopiesTheRecordTheTagNamesAfterTheStepsWork) {
  Stream s;
  StampRing engine(s.get(), 4, sizeof(unsigned long long), 2, 2 * sizeof(unsigned long long),
                   Publish::kBeside);
  const unsigned long long* records = engine.record<unsigned long long>(0);
  const unsigned* tag = engine.tag();
  auto stride = static_cast<unsigned>(engine.record_bytes() / sizeof(unsigned long long));
  unsigned k = 0;
  unsigned long long* to = nullptr;
  void* args[] = {&records, &k, &stride, &to};
  engine.set_publication({reinterpret_cast<const void*>(&publish_record), 1, args});
  EXPECT_EQ(engine.record_bytes(), sizeof(unsigned long long)) << "records as kernels index them";
  EXPECT_EQ(engine.record<unsigned long long>(3), records + 3);
  tagged_stamp<<<1, 1, 0, s.get()>>>(engine.record<unsigned long long>(0), tag, stride, 5);
  s.synchronize();
  EXPECT_EQ(engine.readings().in_flight(), 0u);
  const char* what = nullptr;
  for (unsigned step = 2; step < 4; ++step) {  // record 2, then record 3
    ASSERT_EQ(engine.write_tag(s.get(), step), 0);
    tagged_stamp<<<1, 1, 0, s.get()>>>(engine.record<unsigned long long>(0), tag, stride,
                                       100 + step);
    k = step;
    to = engine.next_reading<unsigned long long>();
    ASSERT_EQ(engine.publish(s.get(), step, 0, what), cudaSuccess) << what;
  }
  s.synchronize();
  engine.synchronize();
  std::vector<std::pair<std::uint64_t, unsigned long long>> got;
  engine.readings().poll([&](std::size_t at, std::uint64_t step, bool arrived) {
    EXPECT_TRUE(arrived);
    const auto* r = engine.readings().host<const unsigned long long>(at);
    EXPECT_EQ(r[1], step) << "the record the host named";
    got.emplace_back(step, r[0]);
    return true;
  });
  EXPECT_EQ(got, (Read{{2, 102}, {3, 103}})) << "each step's record, read after its stamp";
}

TEST_F(GpuTest, OnTheStreamAPublicationCopiesTheHostsBytesOfItsOneRecord) {
  Stream s;
  EXPECT_THROW(StampRing(s.get(), 2, 8, 2, 8, Publish::kOnStream), std::invalid_argument);
  StampRing engine(s.get(), 1, 4 * sizeof(unsigned long long), 2, 4 * sizeof(unsigned long long),
                   Publish::kOnStream);
  unsigned long long* row = engine.record<unsigned long long>(0);
  write_value<<<1, 1, 0, s.get()>>>(row, 7);
  write_value<<<1, 1, 0, s.get()>>>(row + 1, 8);
  write_value<<<1, 1, 0, s.get()>>>(row + 2, 9);  // past the bytes published
  const std::size_t at = engine.readings().next();
  engine.readings().host<unsigned long long>(at)[2] = 42;
  const char* what = nullptr;
  ASSERT_EQ(engine.publish(s.get(), 6, 2 * sizeof(unsigned long long), what), cudaSuccess) << what;
  write_value<<<1, 1, 0, s.get()>>>(row, 70);  // the next step's, after the publication
  s.synchronize();
  Read got;
  engine.readings().poll([&](std::size_t slot, std::uint64_t step, bool) {
    const auto* r = engine.readings().host<const unsigned long long>(slot);
    got.emplace_back(step, r[0] * 100 + r[1]);
    EXPECT_EQ(r[2], 42u) << "only the bytes the host asked for";
    return true;
  });
  EXPECT_EQ(got, (Read{{6, 708}}));
  // A full ring refuses a publication rather than overwrite an unread reading.
  StampRing one(s.get(), 1, 8, 1, 8, Publish::kOnStream);
  ASSERT_EQ(one.publish(s.get(), 1, 8, what), cudaSuccess) << what;
  EXPECT_EQ(one.publish(s.get(), 2, 8, what), cudaErrorNotReady);
  EXPECT_STREQ(what, "the publication (every reading is still unread)");
  one.synchronize();
  EXPECT_EQ(one.readings().in_flight(), 1u) << "refused: nothing sent";
}
