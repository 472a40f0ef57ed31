// SPDX-License-Identifier: MIT
#include "simprof/cuda/stage_timer.hpp"

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "simprof/base/log.hpp"
#include "simprof/cuda/device_clock.cuh"
#include "simprof/cuda/error.hpp"
#include "simprof/profiler/report.hpp"

namespace simprof::cuda {

namespace detail {
struct StampEntry {
  std::int32_t stage;
  std::int32_t kind;
  unsigned long long t;
};
// One step's readings, written by the device into page-locked host memory.
struct StepRecord {
  unsigned long long seq;  // 1-based step record number
  unsigned long long t_begin;
  unsigned long long t_end;
  unsigned int count;
  unsigned int overflow;
  volatile unsigned long long done;  // == seq once t_end and every entry are written
  StampEntry entries[DeviceStageTimer::kMaxStamps];
};
}  // namespace detail

namespace {

enum Op : int { kBegin = 0, kStageBegin = 1, kStageEnd = 2, kEnd = 3 };

// Stage stamps write into device memory (cheap); the step's end copies the finished record to the
// page-locked host mirror in one go, so a step crosses PCIe once, not once per stamp.
__global__ void stamp_kernel(detail::StepRecord* recs, unsigned long long* seq, unsigned ring,
                             int op, int stage) {
  const unsigned long long t = global_timer_ns();
  if (op == kBegin) {
    const unsigned long long s = *seq + 1;
    *seq = s;
    detail::StepRecord& r = recs[(s - 1) % ring];
    r.done = 0;
    r.seq = s;
    r.count = 0;
    r.overflow = 0;
    r.t_begin = t;
    return;
  }
  const unsigned long long s = *seq;
  if (s == 0) return;
  detail::StepRecord& r = recs[(s - 1) % ring];
  if (r.done != 0) return;  // a stamp of a step the host chose not to time: ignore
  if (r.count < DeviceStageTimer::kMaxStamps) {
    r.entries[r.count].stage = stage;
    r.entries[r.count].kind = op;
    r.entries[r.count].t = t;
    ++r.count;
  } else {
    ++r.overflow;
  }
}

constexpr int kPublishThreads = 128;

__global__ void publish_kernel(detail::StepRecord* recs, detail::StepRecord* mirror,
                               const unsigned long long* seq, unsigned ring) {
  __shared__ unsigned long long t_end;
  if (threadIdx.x == 0) t_end = global_timer_ns();
  __syncthreads();
  const unsigned long long s = *seq;
  if (s == 0) return;
  detail::StepRecord& r = recs[(s - 1) % ring];
  if (r.done != 0) return;
  detail::StepRecord& m = mirror[(s - 1) % ring];
  const unsigned n =
      r.count < DeviceStageTimer::kMaxStamps ? r.count : DeviceStageTimer::kMaxStamps;
  for (unsigned i = threadIdx.x; i < n; i += blockDim.x) m.entries[i] = r.entries[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    r.done = s;  // later stamps of this record are ignored
    m.seq = s;
    m.t_begin = r.t_begin;
    m.t_end = t_end;
    m.count = n;
    m.overflow = r.overflow;
    __threadfence_system();  // everything above is visible to the host before `done`
    m.done = s;
  }
}

}  // namespace

DeviceStageTimer::DeviceStageTimer(StepProfiler& prof, cudaStream_t stream, std::size_t in_flight)
    : prof_(prof),
      stream_(stream),
      ring_(in_flight < 2 ? 2 : in_flight),
      host_records_(ring_, cudaHostAllocMapped),
      host_view_(host_records_.device_pointer()),
      dev_records_(ring_),
      dev_seq_(1),
      host_step_(ring_, 0),
      completed_(ring_, 0),
      latest_(prof),
      scratch_(prof) {
  SIMPROF_CUDA_CHECK(cudaMemset(dev_records_.data(), 0, dev_records_.bytes()));
  SIMPROF_CUDA_CHECK(cudaMemset(dev_seq_.data(), 0, dev_seq_.bytes()));
  prof_.add_listener(this);  // last: nothing below can throw once the profiler calls us
}

DeviceStageTimer::~DeviceStageTimer() {
  prof_.remove_listener(this);
  cudaStreamSynchronize(stream_);  // stamps may still be in flight; errors are not thrown here
}

void DeviceStageTimer::stamp(int op, StageId stage) noexcept {
  if (op == kEnd)
    publish_kernel<<<1, kPublishThreads, 0, stream_>>>(
        dev_records_.data(), host_view_, dev_seq_.data(), static_cast<unsigned>(ring_));
  else
    stamp_kernel<<<1, 1, 0, stream_>>>(dev_records_.data(), dev_seq_.data(),
                                       static_cast<unsigned>(ring_), op, static_cast<int>(stage));
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess && !reported_) {
    reported_ = true;
    simprof::default_logger()->error("simprof: DeviceStageTimer: timestamp launch failed: {}",
                                     describe(e));
  }
}

void DeviceStageTimer::on_step_begin(std::uint64_t step, std::int64_t) {
  if (launched_ - next_read_ >= ring_) poll();
  if (launched_ - next_read_ >= ring_) {
    // The GPU is a full ring behind: leave this step untimed rather than wait for it.
    ++dropped_;
    skip_ = true;
    return;
  }
  skip_ = false;
  const std::size_t slot = launched_ % ring_;
  host_step_[slot] = step;
  completed_[slot] = 0;
  ++launched_;
  stamp(kBegin, 0);
}

void DeviceStageTimer::on_stage_begin(StageId id, std::int64_t) {
  if (!skip_) stamp(kStageBegin, id);
}

void DeviceStageTimer::on_stage_end(StageId id, std::int64_t) {
  if (!skip_) stamp(kStageEnd, id);
}

void DeviceStageTimer::on_step_end(std::uint64_t, std::int64_t, StepOutcome outcome) {
  if (skip_) return;
  completed_[(launched_ - 1) % ring_] = outcome == StepOutcome::kCompleted ? 1 : 0;
  stamp(kEnd, 0);
  poll();
}

void DeviceStageTimer::poll() noexcept {
  while (next_read_ < launched_) {
    const std::size_t slot = next_read_ % ring_;
    const detail::StepRecord& r = host_records_[slot];
    if (r.done != next_read_ + 1) break;
    std::atomic_thread_fence(std::memory_order_acquire);
    try {
      join(r, host_step_[slot], completed_[slot] != 0);
    } catch (...) {
      ++dropped_;  // a vector could not grow: the step is lost, and counted
    }
    ++next_read_;
  }
}

void DeviceStageTimer::synchronize() {
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream_));
  poll();
}

void DeviceStageTimer::join(const detail::StepRecord& r, std::uint64_t step, bool completed) {
  const bool consecutive = prev_seq_ + 1 == r.seq;
  const unsigned long long prev_begin = prev_begin_ns_;
  prev_seq_ = r.seq;
  prev_begin_ns_ = r.t_begin;
  if (!completed) return;  // vetoed or aborted on the host: not published there either
  if (r.overflow) ++dropped_;
  const std::size_t n = prof_.num_stages();
  scratch_.reset(step, n);
  if (open_.size() < n) {
    open_.resize(n, 0);
    open_at_.resize(n, 0);
    sums_.resize(n, 0.0);
    counts_.resize(n, 0);
  }
  for (std::size_t i = 0; i < n; ++i) open_[i] = 0;
  const unsigned count = r.count < kMaxStamps ? r.count : kMaxStamps;
  for (unsigned i = 0; i < count; ++i) {
    const detail::StampEntry& e = r.entries[i];
    const auto id = static_cast<StageId>(e.stage);
    if (id >= n) continue;
    if (e.kind == kStageBegin) {
      open_[id] = 1;
      open_at_[id] = static_cast<std::int64_t>(e.t);
    } else if (open_[id]) {
      open_[id] = 0;
      const double d = static_cast<double>(static_cast<std::int64_t>(e.t) - open_at_[id]) * 1e-9;
      scratch_.add(id, d);
      // The host's rule: a child's time also counts into each parent that is not open around it.
      for (StageId p = prof_.stage_parent(id); p != kNoStage && !open_[p];
           p = prof_.stage_parent(p))
        scratch_.add(p, d);
    }
  }
  scratch_.add(kStepStage, static_cast<double>(r.t_end - r.t_begin) * 1e-9);
  if (consecutive && prev_begin != 0)
    scratch_.add(kPeriodStage, static_cast<double>(r.t_begin - prev_begin) * 1e-9);
  std::swap(latest_, scratch_);
  latest_.for_each([&](std::string_view name, double s) {
    const StageId id = prof_.find_stage(name);
    sums_[id] += s;
    ++counts_[id];
  });
  ++joined_;
}

double DeviceStageTimer::mean(std::string_view stage) const {
  const StageId id = prof_.find_stage(stage);
  if (id == kNoStage || id >= counts_.size() || counts_[id] == 0)
    return std::numeric_limits<double>::quiet_NaN();
  return sums_[id] / static_cast<double>(counts_[id]);
}

std::string device_stage_table(const StepProfiler& prof, const DeviceStageTimer& dev) {
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "{:<28} {:>12} {:>12} {:>8}\n", "stage", "host mean us",
                 "device us", "dev share");
  const double dev_step = dev.mean("step");
  for_each_stage_row(prof, [&](StageId id, int depth) {
    const std::string_view name = prof.stage_name(id);
    const double dv = dev.mean(name);
    if (std::isnan(dv)) return;
    std::string host = "-";
    if (prof.options().stats_window > 0) {
      const auto s = prof.stats(name);
      if (s.count) host = fmt::format("{:.1f}", s.mean * 1e6);
    }
    fmt::format_to(std::back_inserter(out), "{:<28} {:>12} {:>12.1f} {:>7.1f}%\n",
                   stage_label(prof, id, depth), host, dv * 1e6,
                   dev_step > 0 ? 100.0 * dv / dev_step : 0.0);
  });
  return fmt::to_string(out);
}

}  // namespace simprof::cuda
