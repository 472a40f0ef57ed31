// SPDX-License-Identifier: MIT
// Stopwatch: the one way simprof's examples and benchmarks time a section of GPU work, so that no
// figure counts work queued before the section. A host stopwatch started while earlier steps are
// still queued counts the wait for them (docs/gpu-truth.md has the case that made this rule).
//
//   * StopwatchClock::kDevice (the default): two CUDA events. The lap is the device's time from the
//     moment the stream reaches start() to the moment it reaches stop(): work queued before start()
//     is never counted, and a section that reads back to the host includes the round trip (the stop
//     event is recorded after it, when the GPU reaches it). stop() does not wait; a read does.
//   * StopwatchClock::kHostDrained: the host's steady clock, read after draining the stream at
//     start() and at stop(): what a host that waits for the GPU sees, synchronisation included.
//
/* clang-format off */
//   simprof::cuda::Stopwatch watch(stream);          // CUDA events
//   for (int i = 0; i < 1000; ++i) {
//     cache.run({n_envs}, body);                     // queued: never inside a lap
//     if (i % 50 == 49) {
//       auto lap = watch.lap();                      // start() here, stop() at the scope's end
//       validate(stream);
//     }
//   }
//   fmt::print("validation {:.0f} us ({})\n", watch.mean_s() * 1e6, watch.clock_label());
/* clang-format on */
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "simprof/cuda/runtime/stream.hpp"

namespace simprof::cuda {

/// Which clock a Stopwatch times its laps with.
enum class StopwatchClock {
  kDevice,       ///< CUDA events on the stream: the GPU's time for the section
  kHostDrained,  ///< the host's steady clock, the stream drained at start() and stop()
};

/// "CUDA events" or "host clock, stream drained": what a printed figure says about its clock.
const char* to_string(StopwatchClock clock) noexcept;

/// Times sections of the work on a stream, lap by lap, on the device's clock (CUDA events) or the
/// host's (the stream drained at each end).
class Stopwatch {
 public:
  /// Times sections of the work on `stream`. Device laps are read lazily: up to `pending` laps may
  /// be stopped and unread before start() waits for the oldest one (>= 1; throws
  /// std::invalid_argument otherwise).
  explicit Stopwatch(cudaStream_t stream, StopwatchClock clock = StopwatchClock::kDevice,
                     int pending = 4);

  /// Starts a lap. Throws std::logic_error when a lap is running.
  void start();
  /// Ends the running lap on the stream it started on. Throws std::logic_error when none runs.
  void stop();
  /// Ends the running lap on `other` (a section that ends on another stream of the same device,
  /// e.g. a consumer stream; the host clock drains both streams).
  void stop(cudaStream_t other);

  /// start() now, stop() when it goes out of scope (an exception included).
  class Lap {
   public:
    /// Starts a lap of `w` (w.start()).
    explicit Lap(Stopwatch& w) : w_(&w) { w_->start(); }
    ~Lap() {
      if (w_) w_->stop_noexcept();
    }
    Lap(const Lap&) = delete;
    Lap& operator=(const Lap&) = delete;
    /// Takes over `o`'s running lap; `o` then stops nothing.
    Lap(Lap&& o) noexcept : w_(o.w_) { o.w_ = nullptr; }
    Lap& operator=(Lap&&) = delete;

   private:
    Stopwatch* w_;
  };
  /// A lap that runs until the returned object goes out of scope.
  [[nodiscard]] Lap lap() { return Lap(*this); }

  /// Runs `section` as one lap and returns its seconds (waits for it on the device clock).
  template <class F>
  double time(F&& section) {
    start();
    section();
    stop();
    return last_s();
  }

  /// Seconds of the last lap stopped (waits for it); 0 when none was.
  double last_s();
  /// Seconds of every lap stopped since construction or reset() (waits for them).
  double total_s();
  /// total_s() / laps(); 0 when no lap was stopped.
  double mean_s();
  /// Laps stopped since construction or reset().
  std::uint64_t laps() const noexcept { return laps_; }
  /// Forgets every lap (waits for none: laps still on the GPU are dropped). Throws
  /// std::logic_error when a lap is running.
  void reset();

  /// The clock laps are timed with.
  StopwatchClock clock() const noexcept { return clock_; }
  /// The clock in words, for printed figures (to_string(clock())).
  const char* clock_label() const noexcept { return to_string(clock_); }
  /// The stream whose work is timed.
  cudaStream_t stream() const noexcept { return stream_; }

 private:
  struct Pair {
    Event start, stop;
  };
  void stop_noexcept() noexcept;
  void fold(std::size_t slot);  // waits for a pending device lap and adds it to the total
  void fold_all();

  cudaStream_t stream_;
  StopwatchClock clock_;
  std::vector<Pair> pairs_;    // device: a ring of event pairs
  std::vector<char> pending_;  // device: slot stopped, not yet read
  std::size_t next_ = 0;       // device: the slot the next lap uses
  bool running_ = false;
  std::chrono::steady_clock::time_point host_start_{};
  double total_s_ = 0, last_s_ = 0;
  std::size_t last_slot_ = 0;  // device: the slot of the last lap stopped
  std::uint64_t laps_ = 0;
};

}  // namespace simprof::cuda
