// SPDX-License-Identifier: MIT
// What LaunchScopes's events cost a stream, measured once per device (launch_scopes.cpp takes it
// off each scope's span).
#include "event_cost.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <vector>

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
  float ms = 0;
  SIMPROF_CUDA_CHECK(cudaEventElapsedTime(&ms, from.get(), to.get()));
  return static_cast<double>(ms) * 1e6;
}

// The mean of the middle half: the events' resolution and a busy GPU make outliers.
double middle_mean(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t q = v.size() / 4;
  double sum = 0;
  for (std::size_t i = q; i < v.size() - q; ++i) sum += v[i];
  return std::max(0.0, sum / static_cast<double>(v.size() - 2 * q));
}

// Per repetition, on a stream of its own, queued behind a kernel that holds the GPU (the host's
// launches are not timed): one kernel between two events (E1; K, the kernel's own time from its
// stamps), two kernels (E2), two kernels with two more events between them (E3). What a scope's
// pair adds to its work is E1 - K; what one event inside it adds, (E3 - E2) / 2.
EventCost measure() {
  const Stream stream;
  const cudaStream_t s = stream.get();
  std::array<Event, 8> e;
  DeviceBuffer<unsigned long long> own(2);
  std::vector<double> pair, inside;
  const auto record = [&](int i) { SIMPROF_CUDA_CHECK(cudaEventRecord(e[i].get(), s)); };
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
  return EventCost{true, middle_mean(pair), middle_mean(inside)};
}

}  // namespace

EventCost event_cost(int device) {
  static std::mutex mu;
  static std::map<int, EventCost> known;
  const std::lock_guard<std::mutex> lock(mu);
  const auto it = known.find(device);
  if (it != known.end()) return it->second;
  const EventCost c = measure();
  known.emplace(device, c);
  return c;
}

}  // namespace simprof::cuda::detail
