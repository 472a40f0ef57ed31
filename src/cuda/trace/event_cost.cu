// SPDX-License-Identifier: MIT
// What LaunchScopes's events cost a stream, measured once per device (launch_scopes.cpp takes it
// off each scope's span).
#include "event_cost.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/device_clock.cuh"

namespace simprof::cuda::detail {

namespace {

// `ns` of the global timer; with `at`, its own start and end there.
__global__ void event_cost_spin(unsigned long long ns, unsigned long long* at) {
  const unsigned long long start = global_timer_ns();
  unsigned long long now = start;
  while (now - start < ns) now = global_timer_ns();
  if (at != nullptr) {
    at[0] = start;
    at[1] = now;
  }
}

constexpr int kReps = 25;                        // the first warms up and is not kept
constexpr unsigned long long kSpinNs = 20'000;   // well above the events' resolution
constexpr unsigned long long kHoldNs = 300'000;  // the host queues a repetition behind it

void spin(cudaStream_t s, unsigned long long ns = kSpinNs, unsigned long long* at = nullptr) {
  event_cost_spin<<<1, 1, 0, s>>>(ns, at);
  SIMPROF_CUDA_CHECK_LAUNCH("event_cost_spin");
}

double elapsed_ns(const Event& from, const Event& to) {
  return static_cast<double>(to.elapsed_ms_since(from)) * 1e6;
}

// The lower quartile: a busy GPU only adds (a stamp waiting for a free slot), and the events'
// resolution makes outliers both ways.
double lower_quartile(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return std::max(0.0, v[v.size() / 4]);
}

// This thread's CUDA calls may not break another thread's capture (a global-mode capture forbids
// the allocation and the synchronisations below): relaxed while it lives.
class RelaxedCapture {
 public:
  RelaxedCapture() noexcept {
    if (cudaThreadExchangeStreamCaptureMode(&mode_) != cudaSuccess) (void)cudaGetLastError();
  }
  ~RelaxedCapture() {
    if (cudaThreadExchangeStreamCaptureMode(&mode_) != cudaSuccess) (void)cudaGetLastError();
  }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

// Per repetition, on a stream of its own at the greatest priority (the block scheduler takes a
// waiting one-thread kernel first, so a GPU busy with the program's work adds least), queued behind
// a kernel that holds that stream (the host's launches are not timed): one kernel between two
// events (E1; K, the kernel's own time from its stamps), two kernels (E2), two kernels with two
// more events between them (E3). What a scope's pair adds to its work is E1 - K; what one event
// inside it adds, (E3 - E2) / 2.
EventCost measure() {
  const RelaxedCapture relaxed;
  const Stream stream(cudaStreamNonBlocking, greatest_priority());
  const cudaStream_t s = stream.get();
  std::array<Event, 8> e;
  DeviceBuffer<unsigned long long> own(2);
  std::vector<double> pair, inside;
  const auto record = [&](int i) { e[i].record(s); };
  for (int rep = 0; rep < kReps; ++rep) {
    spin(s, kHoldNs);
    record(0);
    spin(s, kSpinNs, own.data());
    record(1);
    record(2);
    spin(s);
    spin(s);
    record(3);
    record(4);
    spin(s);
    record(5);
    record(6);
    spin(s);
    record(7);
    unsigned long long k[2] = {};
    own.copy_to_host(k, 2, s);
    SIMPROF_CUDA_CHECK(cudaStreamSynchronize(s));
    if (rep == 0) continue;
    const double one = elapsed_ns(e[0], e[1]), two = elapsed_ns(e[2], e[3]),
                 two_inside = elapsed_ns(e[4], e[7]);
    pair.push_back(one - static_cast<double>(k[1] - k[0]));
    inside.push_back((two_inside - two) / 2);
  }
  EventCost c;
  c.pair_ns = lower_quartile(pair);
  c.inside_ns = lower_quartile(inside);
  // More than half the kernel between the events: the GPU was too busy to tell (nothing is taken
  // off rather than a wrong amount).
  c.measured = c.pair_ns < kSpinNs / 2 && c.inside_ns < kSpinNs / 2;
  if (!c.measured)
    c.why_not = fmt::format(
        "the events' cost read {:.1f} us a pair and {:.1f} us inside, more than the GPU allows "
        "for (it was busy): nothing is taken off",
        c.pair_ns * 1e-3, c.inside_ns * 1e-3);
  return c;
}

}  // namespace

EventCost event_cost(int device) noexcept {
  try {
    static std::mutex mu;
    static std::map<int, EventCost> known;
    const std::lock_guard<std::mutex> lock(mu);
    const auto it = known.find(device);
    if (it != known.end()) return it->second;
    EventCost c;
    try {
      c = measure();
    } catch (const std::exception& e) {  // not measured: said, and nothing is taken off
      (void)cudaGetLastError();
      c = EventCost{};
      c.why_not = std::string("measuring the events' cost failed: ") + e.what();
    }
    known.emplace(device, c);
    return c;
  } catch (...) {  // out of memory
    EventCost c;
    c.why_not = "measuring the events' cost failed: out of memory";
    return c;
  }
}

}  // namespace simprof::cuda::detail
