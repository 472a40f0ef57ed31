// SPDX-License-Identifier: MIT
#include "simprof/cuda/timing/step_pacer.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "simprof/base/log.hpp"
#include "simprof/cuda/runtime/error.hpp"

namespace simprof::cuda {

namespace {

int checked(const StepPacerOptions& o) {
  if (o.max_in_flight < 1)
    throw std::invalid_argument(fmt::format(
        "simprof: StepPacerOptions.max_in_flight = {} (expected >= 1)", o.max_in_flight));
  if (o.mark_every < 1)
    throw std::invalid_argument(
        fmt::format("simprof: StepPacerOptions.mark_every = {} (expected >= 1)", o.mark_every));
  if (o.span_every < 0)
    throw std::invalid_argument(fmt::format(
        "simprof: StepPacerOptions.span_every = {} (expected >= 0; 0: no spans)", o.span_every));
  return o.max_in_flight;
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
    : StepPacer(prof, stream, options, Driven{}) {
  attached_ = prof_.attach(*this);  // last: nothing below can throw once the profiler calls us
}

StepPacer::StepPacer(StepProfiler& prof, cudaStream_t stream, StepPacerOptions options, Driven)
    : prof_(prof),
      stream_(stream),
      device_(bind_device(stream, "StepPacer")),
      options_(options),
      ring_(static_cast<std::size_t>(checked(options)) +
            static_cast<std::size_t>(options.mark_every) + 2),
      steps_(prof, options.fps_from_device,
             fmt::format("a StepPacer on stream {}", static_cast<const void*>(stream))) {
  resets_seen_ = prof_.fps().resets();  // a reset before the pacer is nobody's round
}

StepPacer::~StepPacer() = default;

void StepPacer::report(const char* call, cudaError_t e) noexcept {
  if (reported_) return;
  reported_ = true;
  try {
    default_logger()->error("simprof: StepPacer: {} failed: {}; steps are no longer paced", call,
                            describe(e));
  } catch (...) {
  }
}

void StepPacer::on_step_begin(std::uint64_t step, std::int64_t) {
  const auto n = static_cast<std::uint64_t>(options_.max_in_flight);
  const auto m = static_cast<std::uint64_t>(options_.mark_every);
  if (recorded_ >= n && recorded_ - n >= std::max(taken_, done_)) {
    // The step max_in_flight before this one must have ended on the GPU: its end event (timed or
    // not) is waited for. Without one (a failed record), the latest step before it with an event
    // (within mark_every).
    for (std::uint64_t j = recorded_ - n + 1; j-- > taken_ && j + m + 1 > recorded_ - n;) {
      const Slot& s = slot(j);
      const cudaEvent_t e = s.marked ? s.end.get() : s.paced ? s.pace.get() : nullptr;
      if (e == nullptr) continue;
      if (cudaEventQuery(e) == cudaErrorNotReady) {
        const auto t0 = std::chrono::steady_clock::now();
        if (const cudaError_t r = cudaEventSynchronize(e); r != cudaSuccess)
          report("cudaEventSynchronize", r);
        counters_.wait_s +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++counters_.waits;
      }
      done_ = j + 1;
      break;
    }
  }
  take_in(false);
  const std::uint64_t in_flight = recorded_ - std::max(taken_, done_) + 1;  // with this one
  if (in_flight > counters_.most_in_flight) counters_.most_in_flight = in_flight;
  Slot& s = slot(recorded_);
  s.marked = false;
  s.rebased = prof_.fps().resets() != resets_seen_;
  resets_seen_ = prof_.fps().resets();
  s.spanned =
      options_.span_every > 0 && step % static_cast<std::uint64_t>(options_.span_every) == 0;
  if (s.spanned || s.rebased) {
    if (const cudaError_t e = cudaEventRecord(s.begin.get(), stream_); e != cudaSuccess) {
      report("cudaEventRecord", e);
      s.spanned = s.rebased = false;
    }
  }
  open_ = true;
}

void StepPacer::on_step_end(std::uint64_t step, std::int64_t, StepOutcome outcome) {
  if (!open_) return;
  open_ = false;
  Slot& s = slot(recorded_);
  const auto m = static_cast<std::uint64_t>(options_.mark_every);
  s.paced = false;
  if (s.spanned || step % m == 0) {
    if (const cudaError_t e = cudaEventRecord(s.end.get(), stream_); e == cudaSuccess)
      s.marked = true;
    else
      report("cudaEventRecord", e);
  }
  if (!s.marked) {  // ordering only: the bound, at no cost to the GPU
    if (const cudaError_t e = cudaEventRecord(s.pace.get(), stream_); e == cudaSuccess)
      s.paced = true;
    else
      report("cudaEventRecord", e);
  }
  s.step = step;
  s.completed = outcome == StepOutcome::kCompleted;
  ++recorded_;
  ++counters_.steps;
}

void StepPacer::take_in(bool wait) noexcept {
  while (taken_ < recorded_) {
    // The next marked step; the steps before it end with it.
    std::uint64_t j = taken_;
    while (j < recorded_ && !slot(j).marked) ++j;
    if (j == recorded_) return;
    const Slot& mark = slot(j);
    const cudaError_t q =
        wait ? cudaEventSynchronize(mark.end.get()) : cudaEventQuery(mark.end.get());
    if (q == cudaErrorNotReady) return;
    if (q != cudaSuccess) {
      report(wait ? "cudaEventSynchronize" : "cudaEventQuery", q);
      return;
    }
    // The group's time since the previous mark, shared by its steps; from the start of the last
    // step after an FPS reset, when one is in the group (the steps before it get none).
    std::uint64_t from = taken_;
    for (std::uint64_t k = j + 1; k-- > taken_;)
      if (slot(k).rebased) {
        from = k;
        break;
      }
    const bool rebased = slot(from).rebased;
    const double since = rebased      ? elapsed_s(slot(from).begin, mark.end)
                         : have_mark_ ? elapsed_s(slot(taken_ - 1).end, mark.end)
                                      : DeviceStep::kNone;
    const double per_step = since / static_cast<double>(j - from + 1);
    for (; taken_ <= j; ++taken_) {
      const Slot& s = slot(taken_);
      // A spanned step is always marked: the last of its group.
      const double span = s.spanned && taken_ == j ? elapsed_s(s.begin, s.end) : DeviceStep::kNone;
      try {
        const DeviceStep& d =
            steps_.add(s.step, s.completed, span, taken_ < from ? DeviceStep::kNone : per_step,
                       rebased && taken_ == from);
        if (on_step_) {
          DeviceStep shared = d;
          shared.group_end = mark.step;  // the period is the group's, closed by this mark
          on_step_(shared);
        }
      } catch (const std::exception& e) {
        try {
          default_logger()->error("simprof: StepPacer: {}", e.what());  // an FPS callback threw
        } catch (...) {
        }
      }
    }
    have_mark_ = true;
  }
}

void StepPacer::finish() {
  // The last steps may be unmarked: their end is now, on the stream.
  if (recorded_ > taken_ && !slot(recorded_ - 1).marked) {
    Slot& last = slot(recorded_ - 1);
    if (const cudaError_t e = cudaEventRecord(last.end.get(), stream_); e == cudaSuccess)
      last.marked = true;
    else
      report("cudaEventRecord", e);
  }
  take_in(true);
  steps_.flush();
}

}  // namespace simprof::cuda
