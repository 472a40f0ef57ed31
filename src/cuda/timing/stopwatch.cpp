// SPDX-License-Identifier: MIT
#include "simprof/cuda/timing/stopwatch.hpp"

#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "simprof/base/log.hpp"
#include "simprof/cuda/runtime/error.hpp"

namespace simprof::cuda {

namespace {

std::size_t checked_pending(int pending) {
  if (pending < 1)
    throw std::invalid_argument(
        fmt::format("simprof: Stopwatch pending = {} (expected >= 1 laps read lazily)", pending));
  return static_cast<std::size_t>(pending);
}

void drain(cudaStream_t s) { SIMPROF_CUDA_CHECK(cudaStreamSynchronize(s)); }

}  // namespace

const char* to_string(StopwatchClock clock) noexcept {
  return clock == StopwatchClock::kDevice ? "CUDA events" : "host clock, stream drained";
}

Stopwatch::Stopwatch(cudaStream_t stream, StopwatchClock clock, int pending)
    : stream_(stream), clock_(clock) {
  const std::size_t n = checked_pending(pending);
  if (clock_ == StopwatchClock::kDevice) {
    pairs_.resize(n);
    pending_.assign(n, 0);
  }
}

void Stopwatch::start() {
  if (running_) throw std::logic_error("simprof: Stopwatch::start() while a lap is running");
  if (clock_ == StopwatchClock::kHostDrained) {
    drain(stream_);
    host_start_ = std::chrono::steady_clock::now();
  } else {
    if (pending_[next_]) fold(next_);
    pairs_[next_].start.record(stream_);
  }
  running_ = true;
}

void Stopwatch::stop() { stop(stream_); }

void Stopwatch::stop(cudaStream_t other) {
  if (!running_) throw std::logic_error("simprof: Stopwatch::stop() without a running lap");
  if (clock_ == StopwatchClock::kHostDrained) {
    drain(stream_);
    if (other != stream_) drain(other);
    last_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start_).count();
    total_s_ += last_s_;
  } else {
    pairs_[next_].stop.record(other);
    pending_[next_] = 1;
    last_slot_ = next_;
    next_ = (next_ + 1) % pairs_.size();
  }
  running_ = false;
  ++laps_;
}

void Stopwatch::stop_noexcept() noexcept {
  try {
    stop();
  } catch (const std::exception& e) {
    running_ = false;
    try {
      default_logger()->error("simprof: Stopwatch: the lap's end was lost: {}", e.what());
    } catch (...) {
    }
  }
}

void Stopwatch::fold(std::size_t slot) {
  const Pair& p = pairs_[slot];
  p.stop.synchronize();
  const double s = static_cast<double>(p.stop.elapsed_ms_since(p.start)) * 1e-3;
  pending_[slot] = 0;
  total_s_ += s;
  if (slot == last_slot_) last_s_ = s;
}

void Stopwatch::fold_all() {
  for (std::size_t i = 0; i < pending_.size(); ++i)
    if (pending_[i]) fold(i);
}

double Stopwatch::last_s() {
  if (clock_ == StopwatchClock::kDevice && laps_ && pending_[last_slot_]) fold(last_slot_);
  return last_s_;
}

double Stopwatch::total_s() {
  fold_all();
  return total_s_;
}

double Stopwatch::mean_s() { return laps_ ? total_s() / static_cast<double>(laps_) : 0.0; }

void Stopwatch::reset() {
  if (running_) throw std::logic_error("simprof: Stopwatch::reset() while a lap is running");
  pending_.assign(pending_.size(), 0);
  total_s_ = last_s_ = 0;
  laps_ = 0;
}

}  // namespace simprof::cuda
