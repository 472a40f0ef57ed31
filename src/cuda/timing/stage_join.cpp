// SPDX-License-Identifier: MIT
// DeviceStageTimer's host side: joining the published records to the host's steps, the means and
// the table. The device side (stamps, capture, publication) is in stage_timer.cu.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <iterator>
#include <limits>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "simprof/base/log.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"
#include "simprof/profiler/report.hpp"
#include "stage_record.hpp"

namespace simprof::cuda {

using detail::kStageBegin;
using detail::StepRecord;

void DeviceStageTimer::device_step(const DeviceStep& d) {
  const std::size_t slot = d.step % options_.ring;
  if (stamped_[slot]) {  // joined with the step's stamps
    device_[slot] = d;
    have_device_[slot] = 1;
    return;
  }
  if (!d.completed) return;
  // The loop as it runs without stamps.
  if (std::isfinite(d.step_s)) {
    loop_sum_[0] += d.step_s;
    ++loop_count_[0];
  }
  if (std::isfinite(d.period_s)) {
    loop_sum_[1] += d.period_s;
    ++loop_count_[1];
  }
}

void DeviceStageTimer::poll() noexcept {
  while (next_read_ < ended_) {
    const std::size_t slot = next_read_ % options_.ring;
    if (published_[slot] != next_read_ + 1) {  // not stamped: nothing to wait for
      have_prev_ = false;
      ++next_read_;
      continue;
    }
    const StepRecord& r = mirror_[slot];
    if (r.done != next_read_ + 1) break;
    if (pacer_ && !(have_device_[slot] && device_[slot].step == next_read_)) break;
    std::atomic_thread_fence(std::memory_order_acquire);
    try {
      join(r, next_read_);
    } catch (...) {
      ++dropped_;  // a vector could not grow: the step is lost, and counted
    }
    have_device_[slot] = 0;
    ++next_read_;
  }
}

void DeviceStageTimer::synchronize() {
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream_));
  side_.synchronize();
  if (pacer_) pacer_->finish();
  poll();
}

void DeviceStageTimer::join(const StepRecord& r, std::uint64_t step) {
  const std::size_t slot = step % options_.ring;
  const bool consecutive = have_prev_ && prev_step_ + 1 == step;
  const unsigned long long prev_begin = prev_begin_ns_;
  prev_step_ = step;
  prev_begin_ns_ = r.t_begin;
  have_prev_ = true;
  if (!completed_[slot]) {
    have_prev_ = false;  // the step after a vetoed one has no period, as on the host
    return;
  }
  if (r.overflow) ++dropped_;
  const std::size_t n = prof_.num_stages();
  scratch_.reset(step, n);
  if (open_.size() < n) {
    open_.resize(n, 0);
    open_at_.resize(n, 0);
    open_idx_.resize(n, 0);
    sums_.resize(n, 0.0);
    counts_.resize(n, 0);
  }
  for (std::size_t i = 0; i < n; ++i) open_[i] = 0;
  // Stamps of a graph land in any order: put them in time order (same instant: reserved order).
  const unsigned count = r.count < kMaxStamps ? r.count : kMaxStamps;
  order_.clear();  // reserved for kMaxStamps: no allocation here
  for (unsigned i = 0; i < count; ++i) order_.push_back(i);
  std::sort(order_.begin(), order_.end(), [&](unsigned a, unsigned b) {
    return r.entries[a].t != r.entries[b].t ? r.entries[a].t < r.entries[b].t : a < b;
  });
  const bool eager = eager_[slot] != 0;
  for (const unsigned i : order_) {
    const detail::StampEntry& e = r.entries[i];
    const auto id = static_cast<StageId>(e.stage);
    if (id >= n) continue;
    if (e.kind == kStageBegin) {
      if (open_[id] == 2) continue;  // its end came first: already counted as unpaired
      open_[id] = 1;
      open_at_[id] = static_cast<std::int64_t>(e.t);
      open_idx_[id] = i;
    } else if (open_[id] == 1) {
      open_[id] = 0;
      // Eager stamps sit on the stream, each one adding eager_stamp_ns_ to the stages around it:
      // the stamps from the stage's begin (included) to its end (excluded) are taken out. (One
      // entry per eager stamp, reserved in stream order.)
      const double stamps = eager ? static_cast<double>(i - open_idx_[id]) : 0.0;
      const double d =
          std::max(0.0, (static_cast<double>(static_cast<std::int64_t>(e.t) - open_at_[id]) -
                         stamps * eager_stamp_ns_) *
                            1e-9);
      scratch_.add(id, d);
      // The host's rule: a child's time also counts into each parent that is not open around it.
      for (StageId p = prof_.stage_parent(id); p != kNoStage && open_[p] != 1;
           p = prof_.stage_parent(p))
        scratch_.add(p, d);
    } else if (open_[id] == 0) {
      open_[id] = 2;  // its end ran before its begin
      unpaired(id, step);
    }
  }
  for (std::size_t id = 0; id < n; ++id)
    if (open_[id] == 1) unpaired(static_cast<StageId>(id), step);
  if (pacer_) {
    // Step and period from the pacer's events: the GPU's own, all of the step's work.
    const DeviceStep& d = device_[slot];
    if (std::isfinite(d.step_s)) scratch_.add(kStepStage, d.step_s);
    if (std::isfinite(d.period_s)) scratch_.add(kPeriodStage, d.period_s);
  } else if (r.t_begin != 0) {
    scratch_.add(kStepStage, static_cast<double>(r.t_end - r.t_begin) * 1e-9);
    if (consecutive && prev_begin != 0)
      scratch_.add(kPeriodStage, static_cast<double>(r.t_begin - prev_begin) * 1e-9);
  }
  std::swap(latest_, scratch_);
  latest_.for_each([&](std::string_view name, double s) {
    const StageId id = prof_.find_stage(name);
    sums_[id] += s;
    ++counts_[id];
  });
  ++joined_;
}

// A stage whose stamps did not pair up in time order: in a replayed graph the stamps are leaves off
// the critical path, and a GPU that ran one late (busy SMs, a serialising tool) can put a stage's
// end before its begin. The stage is left out of that step's times, counted, and said once.
void DeviceStageTimer::unpaired(StageId id, std::uint64_t step) {
  if (unpaired_++ == 0)
    simprof::default_logger()->warn(
        "simprof: DeviceStageTimer: stage '{}' of step {} is left out: its stamps ran out of order "
        "(the GPU ran a stamp late); such stages are counted in unpaired()",
        prof_.stage_name(id), step);
}

double DeviceStageTimer::mean(std::string_view stage) const {
  const StageId id = prof_.find_stage(stage);
  if (id == kStepStage || id == kPeriodStage) {
    const int k = id == kStepStage ? 0 : 1;
    if (loop_count_[k]) return loop_sum_[k] / static_cast<double>(loop_count_[k]);
  }
  return sampled_mean(stage);
}

double DeviceStageTimer::sampled_mean(std::string_view stage) const {
  const StageId id = prof_.find_stage(stage);
  if (id == kNoStage || id >= counts_.size() || counts_[id] == 0)
    return std::numeric_limits<double>::quiet_NaN();
  return sums_[id] / static_cast<double>(counts_[id]);
}

std::vector<DeviceStageRow> device_stage_rows(const StepProfiler& prof,
                                              const DeviceStageTimer& dev) {
  std::vector<DeviceStageRow> rows;
  const double dev_step = dev.sampled_mean("step");
  for_each_stage_row(prof, [&](StageId id, int depth) {
    DeviceStageRow r;
    r.device_mean_s = dev.mean(prof.stage_name(id));
    if (std::isnan(r.device_mean_s)) return;
    r.id = id;
    r.name = std::string(prof.stage_name(id));
    r.depth = depth;
    if (prof.options().stats_window > 0) {
      const auto s = prof.stats(r.name);
      if (s.count) r.host_mean_s = s.mean;
    }
    const double sampled = dev.sampled_mean(r.name);
    r.device_share = dev_step > 0 && std::isfinite(sampled) ? 100.0 * sampled / dev_step : 0.0;
    rows.push_back(std::move(r));
  });
  return rows;
}

std::string device_stage_table(const StepProfiler& prof, const DeviceStageTimer& dev) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "{:<28} {:>12} {:>12} {:>8}\n", "stage", "host mean us",
                 "device us", "dev share");
  for (const DeviceStageRow& r : device_stage_rows(prof, dev)) {
    const std::string host =
        std::isnan(r.host_mean_s) ? std::string("-") : fmt::format("{:.1f}", r.host_mean_s * 1e6);
    fmt::format_to(std::back_inserter(out), "{:<28} {:>12} {:>12.1f} {:>7.1f}%\n",
                   stage_label(prof, r.id, r.depth), host, r.device_mean_s * 1e6, r.device_share);
  }
  return fmt::to_string(out);
}
}  // namespace simprof::cuda
