// SPDX-License-Identifier: MIT
#include "simprof/cuda/stage_timer.hpp"

#include <cuda.h>  // the driver API's types: cuStreamWriteValue32 is reached through the runtime

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>

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

// One step's readings. `step` tags the record with the host's step index (low 32 bits): a stamp
// finds its record through the step index the stream wrote before the step's work.
struct StepRecord {
  unsigned int step;
  unsigned int count;  // entries reserved (atomically: stamps of a graph run in any order)
  unsigned int overflow;
  unsigned int pad;
  unsigned long long t_begin;
  unsigned long long t_end;
  volatile unsigned long long done;  // mirror only: host step + 1 once the rest is written
  StampEntry entries[DeviceStageTimer::kMaxStamps];
};

constexpr int kPerNode = 8;  // boundaries one stamp kernel records (they share a device instant)

struct StampArgs {
  StepRecord* recs;
  const unsigned* step;  // written by the stream at every step's start; kNotTimed: skip
  unsigned ring;
  int n;
  int stage[kPerNode];
  int kind[kPerNode];
};

// The stamp nodes of the capture in progress, so boundaries with no work between them share one.
struct CaptureStamps {
  unsigned long long id = 0;
  cudaGraphNode_t begin = nullptr;
  cudaGraphNode_t last = nullptr;
  StampArgs last_args{};
  std::vector<cudaGraphNode_t> last_deps;
};

}  // namespace detail

namespace {

using detail::StepRecord;
enum Kind : int { kStageBegin = 1, kStageEnd = 2 };
constexpr unsigned kNotTimed = 0xffffffffu;

// Starts the step's record (once: an eager stamp before a replayed graph may have started it).
__global__ void begin_kernel(StepRecord* recs, const unsigned* step, unsigned ring) {
  const unsigned long long t = global_timer_ns();
  const unsigned k = *step;
  if (k == kNotTimed) return;
  StepRecord& r = recs[k % ring];
  if (r.step == k && r.t_begin != 0) return;
  r.step = k;
  r.count = 0;
  r.overflow = 0;
  r.t_begin = t;
}

__global__ void stamp_kernel(detail::StampArgs a) {
  const unsigned long long t = global_timer_ns();
  const unsigned k = *a.step;
  if (k == kNotTimed) return;
  StepRecord& r = a.recs[k % a.ring];
  const unsigned first = atomicAdd(&r.count, static_cast<unsigned>(a.n));
  for (int i = 0; i < a.n; ++i) {
    const unsigned e = first + static_cast<unsigned>(i);
    if (e < DeviceStageTimer::kMaxStamps)
      r.entries[e] = detail::StampEntry{a.stage[i], a.kind[i], t};
    else
      atomicAdd(&r.overflow, 1u);
  }
}

constexpr int kPublishThreads = 128;

// On the timer's own stream, after the step ended: copies step `k`'s record (or an empty one, when
// the step stamped nothing) into the mapped mirror.
__global__ void publish_kernel(const StepRecord* recs, StepRecord* mirror, unsigned ring,
                               unsigned long long k) {
  __shared__ unsigned long long t_end;
  if (threadIdx.x == 0) t_end = global_timer_ns();
  __syncthreads();
  const StepRecord& r = recs[k % ring];
  StepRecord& m = mirror[k % ring];
  const bool mine = r.step == static_cast<unsigned>(k) && r.t_begin != 0;
  const unsigned n =
      mine ? (r.count < DeviceStageTimer::kMaxStamps ? r.count : DeviceStageTimer::kMaxStamps) : 0u;
  for (unsigned i = threadIdx.x; i < n; i += blockDim.x) m.entries[i] = r.entries[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    m.step = static_cast<unsigned>(k);
    m.count = n;
    m.overflow = mine ? r.overflow : 0u;
    m.t_begin = mine ? r.t_begin : 0ull;
    m.t_end = t_end;
    __threadfence_system();  // everything above is visible to the host before `done`
    m.done = k + 1;
  }
}

using WriteValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

// cuStreamWriteValue32 without linking libcuda: the runtime hands out the driver's entry point.
WriteValue32 write_value32() {
  static const WriteValue32 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &p, 12000,
                                                           cudaEnableDefault, &found);
    if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || p == nullptr) {
      cudaGetLastError();
      return WriteValue32{nullptr};
    }
    return reinterpret_cast<WriteValue32>(p);
  }();
  return fn;
}

std::size_t checked_ring(const DeviceStageTimerOptions& o) {
  const std::size_t least = std::max<std::size_t>(2, static_cast<std::size_t>(o.max_in_flight) + 2);
  if (o.max_in_flight < 0 || o.ring < least)
    throw std::invalid_argument(
        fmt::format("simprof: DeviceStageTimerOptions ring = {} with max_in_flight = {} (expected "
                    "max_in_flight >= 0 and ring >= max(2, max_in_flight + 2))",
                    o.ring, o.max_in_flight));
  return o.ring;
}

}  // namespace

DeviceStageTimer::DeviceStageTimer(StepProfiler& prof, cudaStream_t stream,
                                   DeviceStageTimerOptions options)
    : prof_(prof),
      stream_(stream),
      options_(options),
      mirror_(checked_ring(options), cudaHostAllocMapped),
      mirror_view_(mirror_.device_pointer()),
      records_(options.ring),
      step_index_(1),
      capture_(std::make_unique<detail::CaptureStamps>()),
      published_(options.ring, 0),
      completed_(options.ring, 0),
      device_(options.ring),
      have_device_(options.ring, 0),
      latest_(prof),
      scratch_(prof) {
  if (write_value32() == nullptr)
    throw CudaError(cudaErrorNotSupported, "cudaGetDriverEntryPointByVersion(cuStreamWriteValue32)",
                    __FILE__, __LINE__);
  SIMPROF_CUDA_CHECK(cudaMemset(records_.data(), 0, records_.bytes()));
  SIMPROF_CUDA_CHECK(cudaMemset(step_index_.data(), 0xff, step_index_.bytes()));  // kNotTimed
  order_.reserve(kMaxStamps);
  if (options_.max_in_flight > 0) {
    StepPacerOptions po;
    po.max_in_flight = options_.max_in_flight;
    po.fps_from_device = options_.fps_from_device;
    pacer_.emplace(prof, stream, po);  // registered before this timer: it waits first
    pacer_->set_on_step([this](const DeviceStep& d) { device_step(d); });
  }
  prof_.add_listener(this);  // last: nothing below can throw once the profiler calls us
}

DeviceStageTimer::~DeviceStageTimer() {
  prof_.remove_listener(this);
  // Stamps and publications may still be in flight; errors are not thrown here.
  cudaStreamSynchronize(stream_);
  cudaStreamSynchronize(side_.get());
}

void DeviceStageTimer::set_stream(cudaStream_t stream) noexcept {
  stream_ = stream;
  if (pacer_) pacer_->set_stream(stream);
}

void DeviceStageTimer::report(const char* what, cudaError_t e) noexcept {
  if (reported_) return;
  reported_ = true;
  try {
    simprof::default_logger()->error("simprof: DeviceStageTimer: {} failed: {}", what, describe(e));
  } catch (...) {
  }
}

void DeviceStageTimer::on_step_begin(std::uint64_t step, std::int64_t) {
  if (ended_ - next_read_ >= options_.ring) poll();
  // Without pacing the GPU can fall a whole ring behind: leave this step untimed rather than wait.
  skip_ = ended_ - next_read_ >= options_.ring;
  if (skip_) ++dropped_;
  began_eagerly_ = false;
  // The step's index, written by the stream itself before the step's work: every stamp of the step,
  // eager or inside a replayed graph, finds its record through it.
  const auto value = skip_ ? kNotTimed : static_cast<unsigned>(step);
  const CUresult r = write_value32()(reinterpret_cast<CUstream>(stream_),
                                     reinterpret_cast<CUdeviceptr>(step_index_.data()), value, 0);
  if (r != CUDA_SUCCESS) report("cuStreamWriteValue32", cudaErrorUnknown);
}

void DeviceStageTimer::on_stage_begin(StageId id, std::int64_t) {
  if (!skip_) boundary(id, kStageBegin);
}

void DeviceStageTimer::on_stage_end(StageId id, std::int64_t) {
  if (!skip_) boundary(id, kStageEnd);
}

void DeviceStageTimer::boundary(StageId stage, int kind) noexcept {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  const cudaGraphEdgeData* edges = nullptr;
  std::size_t n_deps = 0;
#if CUDART_VERSION >= 13000
  cudaError_t e = cudaStreamGetCaptureInfo(stream_, &status, &id, &graph, &deps, &edges, &n_deps);
#else
  cudaError_t e =
      cudaStreamGetCaptureInfo_v3(stream_, &status, &id, &graph, &deps, &edges, &n_deps);
#endif
  if (e != cudaSuccess) return report("cudaStreamGetCaptureInfo", e);
  detail::StampArgs a{};
  a.recs = records_.data();
  a.step = step_index_.data();
  a.ring = static_cast<unsigned>(options_.ring);
  a.n = 1;
  a.stage[0] = static_cast<int>(stage);
  a.kind[0] = kind;
  if (status != cudaStreamCaptureStatusActive) {
    // Eager: on the stream, in order.
    if (!began_eagerly_) {
      begin_kernel<<<1, 1, 0, stream_>>>(a.recs, a.step, a.ring);
      began_eagerly_ = true;
    }
    stamp_kernel<<<1, 1, 0, stream_>>>(a);
    if ((e = cudaGetLastError()) != cudaSuccess) report("a timestamp launch", e);
    return;
  }
  // Captured: a leaf node after the work captured so far; nothing waits for it.
  detail::CaptureStamps& c = *capture_;
  cudaKernelNodeParams p{};
  p.gridDim = dim3(1);
  p.blockDim = dim3(1);
  if (c.id != id) {
    c = detail::CaptureStamps{};
    c.id = id;
    void* args[] = {&a.recs, &a.step, &a.ring};
    p.func = reinterpret_cast<void*>(&begin_kernel);
    p.kernelParams = args;
    if ((e = cudaGraphAddKernelNode(&c.begin, graph, nullptr, 0, &p)) != cudaSuccess)
      return report("cudaGraphAddKernelNode", e);
  }
  std::vector<cudaGraphNode_t> now(deps, deps + n_deps);
  if (c.last != nullptr && now == c.last_deps && c.last_args.n < detail::kPerNode) {
    // No work since the last stamp: the same instant, one node more entries.
    c.last_args.stage[c.last_args.n] = a.stage[0];
    c.last_args.kind[c.last_args.n] = kind;
    ++c.last_args.n;
    void* args[] = {&c.last_args};
    p.func = reinterpret_cast<void*>(&stamp_kernel);
    p.kernelParams = args;
    if ((e = cudaGraphKernelNodeSetParams(c.last, &p)) != cudaSuccess)
      report("cudaGraphKernelNodeSetParams", e);
    return;
  }
  std::vector<cudaGraphNode_t> after = now;
  after.push_back(c.begin);
  void* args[] = {&a};
  p.func = reinterpret_cast<void*>(&stamp_kernel);
  p.kernelParams = args;
  if ((e = cudaGraphAddKernelNode(&c.last, graph, after.data(), after.size(), &p)) != cudaSuccess)
    return report("cudaGraphAddKernelNode", e);
  c.last_args = a;
  c.last_deps = std::move(now);
}

void DeviceStageTimer::on_step_end(std::uint64_t step, std::int64_t, StepOutcome outcome) {
  const std::size_t slot = step % options_.ring;
  ended_ = step + 1;
  published_[slot] = 0;
  completed_[slot] = outcome == StepOutcome::kCompleted;
  if (skip_) return;
  // On the timer's stream once the step's work is done: off the path of the next step.
  cudaError_t e = cudaEventRecord(step_done_.get(), stream_);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(side_.get(), step_done_.get(), 0);
  if (e != cudaSuccess) return report("cudaStreamWaitEvent", e);
  publish_kernel<<<1, kPublishThreads, 0, side_.get()>>>(
      records_.data(), mirror_view_, static_cast<unsigned>(options_.ring), step);
  if ((e = cudaGetLastError()) != cudaSuccess) return report("the publish launch", e);
  published_[slot] = 1;
  poll();
}

void DeviceStageTimer::device_step(const DeviceStep& d) {
  device_[d.step % options_.ring] = d;
  have_device_[d.step % options_.ring] = 1;
}

void DeviceStageTimer::poll() noexcept {
  while (next_read_ < ended_) {
    const std::size_t slot = next_read_ % options_.ring;
    if (!published_[slot]) {  // untimed: nothing to wait for
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
  for (const unsigned i : order_) {
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
