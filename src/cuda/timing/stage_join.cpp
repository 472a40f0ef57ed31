// SPDX-License-Identifier: MIT
// DeviceStageTimer's host side: joining the published records to the host's steps, the means and
// the table. The device side: stage_stamps.cpp (stamps, capture), stage_timer.cu (publication).
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
#include "stage_timer_impl.hpp"

namespace simprof::cuda {

using detail::kStageBegin;
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
  const std::size_t n = prof.num_stages();
  scratch.reset(step, n);
  if (open.size() < n) {
    open.resize(n);
    sums.resize(n);
  }
  for (std::size_t i = 0; i < n; ++i) open[i].state = OpenState::kClosed;
  sort_items(r, sl);
  walk_items(sl, step, lost);
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
  for (StageId id = 0; id < n; ++id)
    if (const auto v = latest.find(id)) sums[id].add(*v);
  ++joined;
}

// Stamps of a graph land in any order: all of them in time order (same instant: a graph's in
// reserved order, then the eager ones in stream order), each eager boundary that shared an earlier
// eager stamp's instant right after that stamp.
void DeviceStageTimer::Impl::sort_items(const StepRecord& r, const Slot& sl) {
  const unsigned count = r.count < kMaxStamps ? r.count : kMaxStamps;
  const unsigned n_eager = std::min(r.eager_count, sl.eager_stamps);
  items.clear();  // reserved for 2 kMaxStamps + kMaxAliases: no allocation here
  for (unsigned i = 0; i < count; ++i) {
    const detail::StampEntry& e = r.entries[i];
    items.push_back(Item{e.t, Source::kGraph, i, 0, e.stage, e.kind});
  }
  for (unsigned j = 0; j < n_eager; ++j)
    items.push_back(
        Item{r.eager[j], Source::kEager, j, 0, sl.eager_at[j].stage, sl.eager_at[j].kind});
  for (unsigned k = 0; k < sl.n_aliases; ++k) {
    const Alias& a = sl.aliases[k];
    if (a.source == 0 || a.source > n_eager) continue;  // its stamp's time was not published
    items.push_back(
        Item{r.eager[a.source - 1], Source::kEager, a.source - 1, k + 1, a.stage, a.kind});
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    if (a.t != b.t) return a.t < b.t;
    if (a.source != b.source) return a.source < b.source;
    return a.place != b.place ? a.place < b.place : a.sub < b.sub;
  });
}

// The stages' device times from the sorted stamps: a begin opens its stage, its end closes it,
// the eager stamps inside taken out; children counted into their parents as on the host.
void DeviceStageTimer::Impl::walk_items(const Slot& sl, std::uint64_t step, bool lost) {
  const std::size_t n = prof.num_stages();
  unsigned eager_before = 0;  // eager stamps before the item in time order (its own excluded)
  for (const Item& e : items) {
    const bool eager = e.source == Source::kEager;
    // A merged boundary comes right after its stamp, which it is: not before it.
    const unsigned at = eager && e.sub != 0 ? eager_before - 1 : eager_before;
    if (eager && e.sub == 0) ++eager_before;
    const auto id = static_cast<StageId>(e.stage);
    if (id >= n) continue;
    Open& o = open[id];
    if (e.kind == kStageBegin) {
      if (o.state == OpenState::kEndFirst) continue;  // already counted as unpaired
      o = Open{static_cast<std::int64_t>(e.t), at, OpenState::kOpen};
    } else if (o.state == OpenState::kOpen) {
      o.state = OpenState::kClosed;
      // Eager stamps sit on the stream, each one adding eager_stamp_ns to the stages around it:
      // the stamps from the stage's begin (included) to its end (excluded) are taken out. (A
      // merged boundary counts as its stamp.)
      const double stamps = static_cast<double>(at - o.eager);
      const double d = std::max(0.0, (static_cast<double>(static_cast<std::int64_t>(e.t) - o.at) -
                                      stamps * (sl.plain ? eager_stamp_plain_ns : eager_stamp_ns)) *
                                         1e-9);
      scratch.add(id, d);
      // The host's rule: a child's time also counts into each parent that is not open around it.
      for (StageId p = prof.stage_parent(id); p != kNoStage && open[p].state != OpenState::kOpen;
           p = prof.stage_parent(p))
        scratch.add(p, d);
    } else if (o.state == OpenState::kClosed) {
      o.state = OpenState::kEndFirst;  // its end ran before its begin (or its begin's was lost)
      if (!lost) unpaired(id, step);
    }
  }
  for (std::size_t id = 0; id < n; ++id)
    if (open[id].state == OpenState::kOpen && !lost) unpaired(static_cast<StageId>(id), step);
}

// A stage whose stamps did not pair up in time order: in a replayed graph the stamps are leaves off
// the critical path, and a GPU that ran one late (busy SMs, a serialising tool) can put a stage's
// end before its begin. The stage is left out of that step's times, counted, and said once.
void DeviceStageTimer::Impl::unpaired(StageId id, std::uint64_t step) {
  if (n_unpaired++ == 0)
    simprof::default_logger()->warn(
        "simprof: DeviceStageTimer: stage '{}' of step {} is left out: its stamps ran out of order "
        "(the GPU ran a stamp late); such stages are counted in unpaired()",
        prof.stage_name(id), step);
}

// Step and period: the pacer's unstamped steps where it timed some, else the sampled steps.
const DeviceStageTimer::Impl::Sum* DeviceStageTimer::Impl::sum_of(StageId id) const noexcept {
  if ((id == kStepStage || id == kPeriodStage) && loop[id == kStepStage ? 0 : 1].count)
    return &loop[id == kStepStage ? 0 : 1];
  return id < sums.size() && sums[id].count ? &sums[id] : nullptr;
}

double DeviceStageTimer::Impl::mean(StageId id) const noexcept {
  const Sum* s = sum_of(id);
  return s ? s->seconds / static_cast<double>(s->count) : std::numeric_limits<double>::quiet_NaN();
}

std::uint64_t DeviceStageTimer::Impl::count(StageId id) const noexcept {
  const Sum* s = sum_of(id);
  return s ? s->count : 0;
}

double DeviceStageTimer::Impl::sampled_mean(StageId id) const noexcept {
  if (id >= sums.size() || sums[id].count == 0) return std::numeric_limits<double>::quiet_NaN();
  return sums[id].seconds / static_cast<double>(sums[id].count);
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

std::vector<DeviceStageRow> device_stage_rows(const StepProfiler& prof,
                                              const DeviceStageTimer& dev) {
  std::vector<DeviceStageRow> rows;
  const double dev_step = dev.sampled_mean(kStepStage);
  for_each_stage_row(prof, [&](StageId id, int depth) {
    DeviceStageRow r;
    r.device_mean_s = dev.mean(id);
    if (std::isnan(r.device_mean_s)) return;
    r.id = id;
    r.name = std::string(prof.stage_name(id));
    r.depth = depth;
    if (prof.options().stats_window > 0) {
      const auto s = prof.stats(id);
      if (s.count) r.host_mean_s = s.mean;
    }
    const double sampled = dev.sampled_mean(id);
    // The period is not a part of the step: no share (the table prints "-").
    r.device_share = id != kPeriodStage && dev_step > 0 && std::isfinite(sampled)
                         ? 100.0 * sampled / dev_step
                         : 0.0;
    r.samples = dev.samples(id);
    rows.push_back(std::move(r));
  });
  return rows;
}

std::vector<StageRow> device_record_rows(const StepProfiler& prof, const DeviceStageTimer& dev) {
  std::vector<StageRow> out;
  for (DeviceStageRow& d : device_stage_rows(prof, dev)) {
    StageRow r;
    r.id = d.id;
    r.name = std::move(d.name);
    r.depth = d.depth;
    r.stats = summarize(d.samples);
    r.share = d.device_share;
    r.samples = std::move(d.samples);
    out.push_back(std::move(r));
  }
  return out;
}

std::string device_stage_table(const StepProfiler& prof, const DeviceStageTimer& dev) {
  fmt::memory_buffer out;
  // The device's mean, and the median of its latest samples: one stalled step moves only the mean.
  fmt::format_to(std::back_inserter(out), "{:<28} {:>12} {:>12} {:>12} {:>8}\n", "stage",
                 "host mean us", "device us", "dev p50 us", "dev share");
  for (const DeviceStageRow& r : device_stage_rows(prof, dev)) {
    const std::string host =
        std::isnan(r.host_mean_s) ? std::string("-") : fmt::format("{:.1f}", r.host_mean_s * 1e6);
    const std::string share =
        r.id == kPeriodStage ? std::string("-") : fmt::format("{:.1f}%", r.device_share);
    fmt::format_to(std::back_inserter(out), "{:<28} {:>12} {:>12.1f} {:>12.1f} {:>8}\n",
                   stage_label(prof, r.id, r.depth), host, r.device_mean_s * 1e6,
                   summarize(r.samples).p50 * 1e6, share);
  }
  fmt::format_to(std::back_inserter(out), "(device: {} sampled steps joined", dev.joined());
  if (dev.unstamped() != 0)
    fmt::format_to(std::back_inserter(out), ", {} sampled steps unstamped: not in it",
                   dev.unstamped());
  if (dev.dropped() != 0) fmt::format_to(std::back_inserter(out), ", {} dropped", dev.dropped());
  // Steps a kernel tracer traced launch their eager stamps plainly, at the plain cost.
  const StampCost cost = dev.stamp_cost();
  const std::string plain =
      cost.dependent_launch && std::isfinite(cost.eager_plain_ns)
          ? fmt::format(", {:.2f} us in traced steps", cost.eager_plain_ns * 1e-3)
          : std::string();
  fmt::format_to(std::back_inserter(out), "; {:.2f} us an eager stamp{}, taken off eager stages)\n",
                 dev.eager_stamp_seconds() * 1e6, plain);
  return fmt::to_string(out);
}
}  // namespace simprof::cuda
