// SPDX-License-Identifier: MIT
// DeviceStageTimer's host side: joining the published records to the host's steps (the stamps'
// arithmetic is stage_walk.*), and the means. The device side: stage_stamps.cpp (stamps, capture),
// stage_timer.cpp (steps, publication), stage_kernels.cu. Its table: timer_tables.cpp.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "simprof/base/log.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"
#include "stage_timer_impl.hpp"

namespace simprof::cuda {

using detail::StepRecord;

void DeviceStageTimer::Impl::device_step(const DeviceStep& d) {
  const std::size_t slot = d.step % options.ring;
  if (slots[slot].stamped) {  // joined with the step's stamps
    slots[slot].device = d;
    slots[slot].have_device = true;
    return;
  }
  if (!d.completed) return;
  // The loop as it runs without stamps.
  if (std::isfinite(d.step_s)) loop[0].add(d.step_s);
  // A period shared with a stamped step (its group ends there) carries a share of the stamps'
  // cost: not the loop as it runs without the timer.
  const bool shares_stamps = d.group_end != d.step && slots[d.group_end % options.ring].stamped;
  // The steps of a pacer's group share its mean period: one sample a group (at its end), so the
  // samples a record keeps are independent measurements.
  if (std::isfinite(d.period_s) && !shares_stamps) loop[1].add(d.period_s, d.step == d.group_end);
}

void DeviceStageTimer::Impl::poll() noexcept {
  engine.readings().poll([this](std::size_t at, std::uint64_t step, bool arrived) {
    Slot& sl = slots[step % options.ring];
    if (arrived && pacer && !(sl.have_device && sl.device.step == step)) return false;
    sl.unread = false;
    sl.have_device = false;
    if (!arrived) {  // its publication failed on the GPU: the step is lost, and counted
      ++dropped;
      have_prev = false;
      return true;
    }
    try {
      join(*engine.readings().host<const StepRecord>(at), step);
    } catch (...) {
      ++dropped;  // a vector could not grow: the step is lost, and counted
    }
    return true;
  });
}

void DeviceStageTimer::Impl::synchronize() {
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
  engine.synchronize();
  if (pacer) pacer->finish();
  poll();
}

void DeviceStageTimer::Impl::join(const StepRecord& r, std::uint64_t step) {
  const std::size_t slot = step % options.ring;
  const bool consecutive = have_prev && prev_step + 1 == step;
  const unsigned long long prev_begin = prev_begin_ns;
  prev_step = step;
  prev_begin_ns = r.t_begin;
  have_prev = true;
  if (!slots[slot].completed) {
    have_prev = false;  // the step after a vetoed one has no period, as on the host
    return;
  }
  const Slot& sl = slots[slot];
  // Stamps lost (past kMaxStamps, a failed launch): the step counts as dropped; the stages whose
  // two boundaries were stamped are still read, the others are left out without a word.
  const bool lost = r.overflow != 0 || sl.eager_lost;
  if (lost) ++dropped;
  scratch.reset(step, prof.num_stages());
  const unsigned n_eager = std::min(r.eager_count, sl.eager_stamps);
  detail::StepStamps stamps;
  stamps.graph = r.entries;
  stamps.n_graph = std::min(r.count, static_cast<unsigned>(kMaxStamps));
  stamps.eager = r.eager;
  stamps.marks = sl.eager_at.data();
  stamps.n_eager = n_eager;
  stamps.merged = sl.aliases.data();
  stamps.n_merged = sl.n_aliases;
  stamps.eager_ns = sl.plain ? eager_stamp_plain_ns : eager_stamp_ns;
  if (sums.size() < prof.num_stages()) sums.resize(prof.num_stages());
  walk.walk(stamps, prof, scratch);
  if (!lost)
    for (const StageId id : walk.unpaired()) unpaired(id, step);
  if (pacer) {
    // Step and period from the pacer's events: the GPU's own, all of the step's work.
    const DeviceStep& d = slots[slot].device;
    if (std::isfinite(d.step_s)) scratch.add(kStepStage, d.step_s);
    if (std::isfinite(d.period_s)) scratch.add(kPeriodStage, d.period_s);
  } else if (r.t_begin != 0) {
    scratch.add(kStepStage, static_cast<double>(r.t_end - r.t_begin) * 1e-9);
    if (consecutive && prev_begin != 0)
      scratch.add(kPeriodStage, static_cast<double>(r.t_begin - prev_begin) * 1e-9);
  }
  std::swap(latest, scratch);
  for (StageId id = 0; id < prof.num_stages(); ++id)
    if (const auto v = latest.find(id)) sums[id].add(*v);
  ++joined;
}

// A stage whose stamps did not pair up in time order: in a replayed graph the stamps are leaves off
// the critical path, and a GPU that ran one late (busy SMs, a serialising tool) can put a stage's
// end before its begin. The stage is left out of that step's times, counted, and said once.
void DeviceStageTimer::Impl::unpaired(StageId id, std::uint64_t step) {
  ++n_unpaired;
  voice.warn(unpaired_said,
             "stage '{}' of step {} is left out: its stamps ran out of order "
             "(the GPU ran a stamp late); such stages are counted in unpaired()",
             prof.stage_name(id), step);
}

// Step and period: the pacer's unstamped steps where it timed some, else the sampled steps.
const DeviceStageTimer::Impl::Sum* DeviceStageTimer::Impl::sum_of(StageId id) const noexcept {
  if ((id == kStepStage || id == kPeriodStage) && loop[id == kStepStage ? 0 : 1].stat.count)
    return &loop[id == kStepStage ? 0 : 1];
  return id < sums.size() && sums[id].stat.count ? &sums[id] : nullptr;
}

double DeviceStageTimer::Impl::mean(StageId id) const noexcept {
  const Sum* s = sum_of(id);
  return s ? s->stat.mean() : std::numeric_limits<double>::quiet_NaN();
}

std::uint64_t DeviceStageTimer::Impl::count(StageId id) const noexcept {
  const Sum* s = sum_of(id);
  return s ? s->stat.count : 0;
}

double DeviceStageTimer::Impl::sampled_mean(StageId id) const noexcept {
  return id < sums.size() ? sums[id].stat.mean() : std::numeric_limits<double>::quiet_NaN();
}

// The public face: what a user calls, each a line over Impl.
const TimingsSnapshot& DeviceStageTimer::device_timings() const noexcept { return impl_->latest; }
void DeviceStageTimer::poll() noexcept { impl_->poll(); }
void DeviceStageTimer::synchronize() { impl_->synchronize(); }
double DeviceStageTimer::mean(StageId stage) const noexcept { return impl_->mean(stage); }
double DeviceStageTimer::mean(std::string_view stage) const noexcept {
  return impl_->mean(impl_->prof.find_stage(stage));
}
double DeviceStageTimer::sampled_mean(StageId stage) const noexcept {
  return impl_->sampled_mean(stage);
}
double DeviceStageTimer::sampled_mean(std::string_view stage) const noexcept {
  return impl_->sampled_mean(impl_->prof.find_stage(stage));
}
std::vector<double> DeviceStageTimer::samples(StageId stage) const {
  const Impl::Sum* s = impl_->sum_of(stage);
  return s ? s->recent.to_vector() : std::vector<double>();
}
std::vector<double> DeviceStageTimer::samples(std::string_view stage) const {
  return samples(impl_->prof.find_stage(stage));
}
std::uint64_t DeviceStageTimer::joined() const noexcept { return impl_->joined; }
std::uint64_t DeviceStageTimer::dropped() const noexcept { return impl_->dropped; }
std::uint64_t DeviceStageTimer::unpaired() const noexcept { return impl_->n_unpaired; }
std::uint64_t DeviceStageTimer::unstamped() const noexcept { return impl_->n_unstamped; }
std::uint64_t DeviceStageTimer::count(StageId stage) const noexcept { return impl_->count(stage); }
std::uint64_t DeviceStageTimer::count(std::string_view stage) const noexcept {
  return impl_->count(impl_->prof.find_stage(stage));
}
std::uint64_t DeviceStageTimer::merged() const noexcept { return impl_->n_merged; }
double DeviceStageTimer::eager_stamp_seconds() const noexcept {
  return impl_->eager_stamp_ns * 1e-9;
}
StampCost DeviceStageTimer::stamp_cost() const { return cuda::stamp_cost(impl_->device_id); }
const DeviceStageTimerOptions& DeviceStageTimer::options() const noexcept { return impl_->options; }
int DeviceStageTimer::device() const noexcept { return impl_->device_id; }
const StepPacer* DeviceStageTimer::pacer() const noexcept {
  return impl_->pacer ? &*impl_->pacer : nullptr;
}

}  // namespace simprof::cuda
