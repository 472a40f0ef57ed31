// SPDX-License-Identifier: MIT
#include "simprof/cuda/step_pacer.hpp"

#include <chrono>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "simprof/base/log.hpp"
#include "simprof/cuda/error.hpp"

namespace simprof::cuda {

namespace {

int checked(int max_in_flight) {
  if (max_in_flight < 1)
    throw std::invalid_argument(
        fmt::format("simprof: StepPacerOptions.max_in_flight = {} (expected >= 1)", max_in_flight));
  return max_in_flight;
}

double elapsed_s(const Event& from, const Event& to) {
  float ms = 0;
  if (cudaEventElapsedTime(&ms, from.get(), to.get()) != cudaSuccess) {
    cudaGetLastError();  // not a sticky error: the pair just cannot be timed
    return DeviceStep::kNone;
  }
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace

StepPacer::StepPacer(StepProfiler& prof, cudaStream_t stream, StepPacerOptions options)
    : prof_(prof),
      stream_(stream),
      options_(options),
      ring_(static_cast<std::size_t>(checked(options.max_in_flight)) + 2),
      steps_(prof, options.fps_from_device) {
  prof_.add_listener(this);  // last: nothing below can throw once the profiler calls us
}

StepPacer::~StepPacer() { prof_.remove_listener(this); }

void StepPacer::report(const char* call, cudaError_t e) noexcept {
  if (reported_) return;
  reported_ = true;
  try {
    default_logger()->error("simprof: StepPacer: {} failed: {}; steps are no longer paced", call,
                            describe(e));
  } catch (...) {
  }
}

void StepPacer::on_step_begin(std::uint64_t, std::int64_t) {
  const auto n = static_cast<std::uint64_t>(options_.max_in_flight);
  if (recorded_ >= n) {
    // The step max_in_flight before this one must have ended on the GPU.
    const Slot& oldest = ring_[(recorded_ - n) % ring_.size()];
    if (cudaEventQuery(oldest.end.get()) == cudaErrorNotReady) {
      const auto t0 = std::chrono::steady_clock::now();
      if (const cudaError_t e = cudaEventSynchronize(oldest.end.get()); e != cudaSuccess)
        report("cudaEventSynchronize", e);
      counters_.wait_s +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      ++counters_.waits;
    }
  }
  take_in(false);
  const std::uint64_t ahead = recorded_ - taken_;
  if (ahead > counters_.most_ahead) counters_.most_ahead = ahead;
  Slot& s = ring_[recorded_ % ring_.size()];
  if (const cudaError_t e = cudaEventRecord(s.begin.get(), stream_); e != cudaSuccess)
    report("cudaEventRecord", e);
  open_ = true;
}

void StepPacer::on_step_end(std::uint64_t step, std::int64_t, StepOutcome outcome) {
  if (!open_) return;
  open_ = false;
  Slot& s = ring_[recorded_ % ring_.size()];
  if (const cudaError_t e = cudaEventRecord(s.end.get(), stream_); e != cudaSuccess)
    report("cudaEventRecord", e);
  s.step = step;
  s.completed = outcome == StepOutcome::kCompleted;
  ++recorded_;
  ++counters_.steps;
}

void StepPacer::take_in(bool wait) noexcept {
  while (taken_ < recorded_) {
    const Slot& s = ring_[taken_ % ring_.size()];
    const cudaError_t q = wait ? cudaEventSynchronize(s.end.get()) : cudaEventQuery(s.end.get());
    if (q == cudaErrorNotReady) return;
    if (q != cudaSuccess) {
      report(wait ? "cudaEventSynchronize" : "cudaEventQuery", q);
      return;
    }
    const double since =
        taken_ > 0 ? elapsed_s(ring_[(taken_ - 1) % ring_.size()].end, s.end) : DeviceStep::kNone;
    try {
      const DeviceStep& d = steps_.add(s.step, s.completed, elapsed_s(s.begin, s.end), since);
      if (on_step_) on_step_(d);
    } catch (const std::exception& e) {
      try {
        default_logger()->error("simprof: StepPacer: {}", e.what());  // an FPS callback threw
      } catch (...) {
      }
    }
    ++taken_;
  }
}

void StepPacer::finish() {
  take_in(true);
  steps_.flush();
}

}  // namespace simprof::cuda
