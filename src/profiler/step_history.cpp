// SPDX-License-Identifier: MIT
// StepProfiler's published values and per-stage history: the window means timings() reads, and
// history() / stats() / histogram() over the stats window.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "simprof/profiler/step_profiler.hpp"

namespace simprof {

double StepProfiler::published_seconds(StageId id) const noexcept {
  const std::uint64_t p = published_serial_;
  if (p == 0) return -1.0;
  const Slot& s = slots_[id];
  std::int64_t v = 0;
  bool retired = false;
  if (s.ran_in == p) {
    v = s.accum;
  } else if (s.prev_in == p) {
    v = s.prev;
    retired = true;  // already the newest value of the window ring
  } else {
    return -1.0;
  }
  if (!s.window.capacity()) return clock_.seconds(v);
  // Window mean over the latest N totals that include the published one; integer sums are exact.
  std::int64_t sum = s.window_sum;
  std::size_t n = s.window.size();
  if (!retired) {
    if (s.window.full()) sum -= s.window.oldest();
    sum += v;
    n = std::min(n + 1, s.window.capacity());
  }
  return clock_.seconds(sum) / static_cast<double>(n);
}

std::vector<std::int64_t> StepProfiler::history_ticks(const Slot& s) const {
  std::vector<std::int64_t> out = s.history.to_vector();
  // The latest total is retired only when the stage runs again: add it while it is complete.
  const bool pending =
      s.ran_in != 0 && s.ran_in > stats_from_ && !(in_step_ && s.ran_in == serial_);
  if (pending) {
    if (out.size() == s.history.capacity() && !out.empty()) out.erase(out.begin());
    out.push_back(s.accum);
  }
  return out;
}

const StepProfiler::Slot& StepProfiler::slot_for(StageId id, const char* what) const {
  if (id >= slots_.size())
    throw std::invalid_argument(
        fmt::format("simprof: {}(StageId {}): no such stage ({} stages)", what, id, slots_.size()));
  if (options_.stats_window == 0)
    throw std::invalid_argument(fmt::format(
        "simprof: {}('{}'): stats_window is 0, so no history is kept", what, names_[id]));
  return slots_[id];
}

StageId StepProfiler::checked_stage(std::string_view stage, const char* what) const {
  const StageId id = find_stage(stage);
  if (id == kNoStage)
    throw std::invalid_argument(fmt::format("simprof: {}('{}'): no such stage", what, stage));
  return id;
}

std::vector<double> StepProfiler::history(StageId stage) const {
  const auto ticks = history_ticks(slot_for(stage, "history"));
  std::vector<double> out(ticks.size());
  for (std::size_t i = 0; i < ticks.size(); ++i) out[i] = clock_.seconds(ticks[i]);
  return out;
}

std::vector<double> StepProfiler::history(std::string_view stage) const {
  return history(checked_stage(stage, "history"));
}

void StepProfiler::reset_stats() noexcept {
  stats_from_ = serial_;
  for (Slot& s : slots_) s.history.clear();
}

LatencyStats StepProfiler::stats(StageId stage) const { return summarize(history(stage)); }

LatencyStats StepProfiler::stats(std::string_view stage) const {
  return stats(checked_stage(stage, "stats"));
}

std::string StepProfiler::histogram(StageId stage, const HistogramOptions& options) const {
  return text_histogram(history(stage), options);
}

std::string StepProfiler::histogram(std::string_view stage, const HistogramOptions& options) const {
  return histogram(checked_stage(stage, "histogram"), options);
}

}  // namespace simprof
