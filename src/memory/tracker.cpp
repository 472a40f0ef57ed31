// SPDX-License-Identifier: MIT
#include "simprof/memory/tracker.hpp"

#include <unistd.h>

#include <algorithm>
#include <iterator>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "simprof/base/log.hpp"
#include "simprof/profiler/report.hpp"
#include "simprof/profiler/step_profiler.hpp"

namespace simprof {

AllocCounts& AllocCounts::operator+=(const AllocCounts& o) noexcept {
  allocs += o.allocs;
  alloc_bytes += o.alloc_bytes;
  frees += o.frees;
  free_bytes += o.free_bytes;
  return *this;
}

AllocCounts operator-(AllocCounts a, const AllocCounts& b) noexcept {
  a.allocs -= b.allocs;
  a.alloc_bytes -= b.alloc_bytes;
  a.frees -= b.frees;
  a.free_bytes -= b.free_bytes;
  return a;
}

AllocCounts HostAllocations::counts() const noexcept {
  AllocCounts c;
  c.allocs = allocs_.load(std::memory_order_relaxed);
  c.alloc_bytes = alloc_bytes_.load(std::memory_order_relaxed);
  c.frees = frees_.load(std::memory_order_relaxed);
  c.free_bytes = free_bytes_.load(std::memory_order_relaxed);
  return c;
}

HostAllocations& host_allocations() noexcept {
  static HostAllocations counter;
  return counter;
}

namespace {

constexpr int kDevice = 0, kHost = 1;

int side_index(MemorySide s) { return s == MemorySide::kDevice ? kDevice : kHost; }

}  // namespace

MemoryTracker::MemoryTracker(StepProfiler& prof, const AllocSource* device, const AllocSource* host,
                             MemoryOptions options)
    : prof_(prof), sources_{device, host}, options_(options), time_base_(prof.clock()) {
  grow(static_cast<StageId>(prof.num_stages() > 0 ? prof.num_stages() - 1 : 0));
  attached_ = prof_.attach(*this);  // last: nothing below throws
}

MemoryTracker::~MemoryTracker() = default;

void MemoryTracker::grow(StageId id) {
  const std::size_t n = std::max<std::size_t>(id + 1, kPeriodStage + 1);
  if (begin_.size() >= n) return;
  begin_.resize(n);
  step_delta_.resize(n);
  totals_.resize(n);
  ran_in_.resize(n, 0);
  steps_.resize(n, 0);
}

MemoryTracker::Both MemoryTracker::read() const noexcept {
  Both b;
  for (int s = 0; s < 2; ++s)
    if (sources_[s]) b.side[s] = sources_[s]->counts();
  return b;
}

void MemoryTracker::on_step_begin(std::uint64_t step, std::int64_t) {
  step_ = step;
  offender_ = kNoStage;
  step_begin_ = read();
}

void MemoryTracker::on_stage_begin(StageId id, std::int64_t) {
  if (id >= begin_.size()) {
    try {
      grow(id);  // the first time a stage is seen only
    } catch (...) {
      return;  // out of memory: this stage goes uncounted in this step
    }
  }
  begin_[id] = read();
}

void MemoryTracker::on_stage_end(StageId id, std::int64_t) {
  if (id >= begin_.size()) return;
  const Both now = read();
  Both d;
  for (int s = 0; s < 2; ++s) d.side[s] = now.side[s] - begin_[id].side[s];
  if (ran_in_[id] != step_ + 1) {
    step_delta_[id] = Both{};
    ran_in_[id] = step_ + 1;
  }
  for (int s = 0; s < 2; ++s) step_delta_[id].side[s] += d.side[s];
  // Children end before their parents: the first stage to end having allocated is the innermost.
  if (offender_ == kNoStage && d.side[kDevice].allocs > 0) offender_ = id;
}

void MemoryTracker::on_step_end(std::uint64_t step, std::int64_t ticks, StepOutcome outcome) {
  if (outcome != StepOutcome::kCompleted) return;  // as for times: a dropped step publishes nothing
  const Both now = read();
  for (int s = 0; s < 2; ++s) last_[s] = now.side[s] - step_begin_.side[s];
  for (StageId id = kPeriodStage + 1; id < ran_in_.size(); ++id)
    if (ran_in_[id] == step + 1) {
      for (int s = 0; s < 2; ++s) totals_[id].side[s] += step_delta_[id].side[s];
      ++steps_[id];
    }
  for (int s = 0; s < 2; ++s) totals_[kStepStage].side[s] += last_[s];
  ++steps_[kStepStage];
  ++completed_;
  if (const AllocSource* dev = sources_[kDevice]) {
    in_use_ = dev->in_use_bytes();
    peak_ = std::max(peak_, in_use_);
  }
  if (completed_ > options_.warmup_steps && last_[kDevice].allocs > 0) {
    if (steady_steps_++ == 0) {
      try {
        first_steady_.step = step;
        if (offender_ != kNoStage) {
          first_steady_.stage = std::string(prof_.stage_name(offender_));
          first_steady_.allocs = step_delta_[offender_].side[kDevice].allocs;
          first_steady_.bytes = step_delta_[offender_].side[kDevice].alloc_bytes;
        } else {
          first_steady_.allocs = last_[kDevice].allocs;
          first_steady_.bytes = last_[kDevice].alloc_bytes;
        }
      } catch (...) {
      }
      warn(first_steady_);
    }
  }
  if (recording_) sample(step, ticks, last_[kDevice].allocs);
}

void MemoryTracker::sample(std::uint64_t step, std::int64_t ticks, std::uint64_t allocs) noexcept {
  if (sampled_ == step + 1) return;  // taken (or dropped) already
  sampled_ = step + 1;
  if (samples_.size() < samples_.capacity())
    samples_.push_back(Sample{ticks, in_use_, allocs});
  else
    ++dropped_;
}

void MemoryTracker::warn(const SteadyAllocation& a) const noexcept {
  try {
    default_logger()->warn(
        "simprof: step {} allocated on the device after the warm-up ({} steps): {} allocation{}, "
        "{} bytes, in {}. A step that allocates cannot be captured into a CUDA graph as it is: "
        "allocate once, outside the step (or from a graph's own memory nodes). Said once; "
        "steady_allocating_steps() counts them.",
        a.step, options_.warmup_steps, a.allocs, a.allocs == 1 ? "" : "s", a.bytes,
        a.stage.empty() ? std::string("no stage (between stages)")
                        : fmt::format("stage '{}'", a.stage));
  } catch (...) {
  }
}

std::int64_t MemoryTracker::device_peak_bytes() const noexcept {
  const std::int64_t own = sources_[kDevice] ? sources_[kDevice]->peak_bytes() : -1;
  return std::max(own, peak_);
}

AllocCounts MemoryTracker::total(StageId id, MemorySide side) const noexcept {
  if (id >= totals_.size()) return {};
  return totals_[id].side[side_index(side)];
}

AllocCounts MemoryTracker::total(std::string_view stage, MemorySide side) const noexcept {
  return total(prof_.find_stage(stage), side);
}

std::uint64_t MemoryTracker::steps(StageId id) const noexcept {
  return id >= steps_.size() ? 0 : steps_[id];
}

std::uint64_t MemoryTracker::steps(std::string_view stage) const noexcept {
  return steps(prof_.find_stage(stage));
}

double MemoryTracker::allocs_per_step(StageId id, MemorySide side) const noexcept {
  const std::uint64_t n = steps(id);
  return n ? static_cast<double>(total(id, side).allocs) / static_cast<double>(n) : 0.0;
}

double MemoryTracker::allocs_per_step(std::string_view stage, MemorySide side) const noexcept {
  return allocs_per_step(prof_.find_stage(stage), side);
}

double MemoryTracker::bytes_per_step(StageId id, MemorySide side) const noexcept {
  const std::uint64_t n = steps(id);
  return n ? static_cast<double>(total(id, side).alloc_bytes) / static_cast<double>(n) : 0.0;
}

double MemoryTracker::bytes_per_step(std::string_view stage, MemorySide side) const noexcept {
  return bytes_per_step(prof_.find_stage(stage), side);
}

void MemoryTracker::start() {
  samples_.clear();
  samples_.reserve(options_.max_counter_samples);
  sampled_ = 0;
  dropped_ = 0;
  recording_ = true;
}

void MemoryTracker::stop() {
  if (!recording_) return;  // stopped on the loop's thread already: nothing is written here
  // A session that saw the window's last step end before this tracker did: its sample, now.
  if (sampled_ != step_ + 1) {
    const Both now = read();
    if (const AllocSource* dev = sources_[kDevice]) in_use_ = dev->in_use_bytes();
    sample(step_, prof_.clock().now(), (now.side[kDevice] - step_begin_.side[kDevice]).allocs);
  }
  recording_ = false;  // the samples are the window's now: the loop adds none until start()
}

std::uint64_t MemoryTracker::stop_and_collect(std::vector<Span>& out) {
  stop();
  const auto pid = static_cast<std::int64_t>(::getpid());
  for (const Sample& s : samples_) {
    const std::int64_t ns = time_base_.to_ns(s.ticks);
    if (s.in_use >= 0)
      out.push_back(Span::counter("device memory in use (MiB)", ns, pid,
                                  static_cast<double>(s.in_use) / (1024.0 * 1024.0)));
    out.push_back(
        Span::counter("device allocations per step", ns, pid, static_cast<double>(s.allocs)));
  }
  samples_.clear();
  const std::uint64_t lost = dropped_;
  dropped_ = 0;
  return lost;
}

std::string stage_table(const StepProfiler& prof, const MemoryTracker& memory) {
  std::vector<MemorySide> sides;
  if (memory.counts(MemorySide::kDevice)) sides.push_back(MemorySide::kDevice);
  if (memory.counts(MemorySide::kHost)) sides.push_back(MemorySide::kHost);
  std::string header;
  for (const MemorySide side : sides)
    header += side == MemorySide::kDevice
                  ? fmt::format(" {:>11} {:>10}", "dev allocs", "dev KiB")
                  : fmt::format(" {:>11} {:>10}", "host allocs", "host KiB");
  auto cells = [&](const StageRow& r) {
    std::string c;
    for (const MemorySide side : sides)
      c += r.id == kPeriodStage
               ? fmt::format(" {:>11} {:>10}", "-", "-")
               : fmt::format(" {:>11.2f} {:>10.1f}", memory.allocs_per_step(r.name, side),
                             memory.bytes_per_step(r.name, side) / 1024.0);
    return c;
  };
  return detail::stage_table_with(prof, header, cells);
}

}  // namespace simprof
