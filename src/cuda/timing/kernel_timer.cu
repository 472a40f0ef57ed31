// SPDX-License-Identifier: MIT
// GraphKernelTimer's sampling: which steps run the stamped copies, the row zeroed before each, and
// where a capture's nodes belong. The copies are made in kernel_copy.cpp, the readings are in
// kernel_read.cpp, the trace windows in kernel_trace.cpp.
#include <cupti.h>  // cuptiGetStreamIdEx: an id only, no subscription

#include <algorithm>
#include <stdexcept>

#include "../cupti/cupti_hub.hpp"  // kernel_tracer_window_open
#include "kernel_timer_impl.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/timing/device_clock.cuh"
#include "stamp_cost.hpp"

namespace simprof::cuda {

namespace {

// A node's stamp: the global timer when the node's work is done, at the node's slot of the row.
// One store at an address fixed in the copy: a load (of a tag naming the record) would add itself
// to every stamp in the chain.
__global__ void node_stamp_kernel(unsigned long long* at) { *at = global_timer_ns(); }

detail::SampleSchedule schedule_of(const GraphKernelTimerOptions& o) {
  return detail::SampleSchedule::checked("GraphKernelTimerOptions", o.sample_every,
                                         o.sample_offset);
}

// The options, validated; sample_offset resolved.
GraphKernelTimerOptions checked(GraphKernelTimerOptions o) {
  o.sample_offset = static_cast<int>(schedule_of(o).offset);
  if (o.ring < 1)
    throw std::invalid_argument("simprof: GraphKernelTimerOptions.ring = 0 (expected >= 1)");
  if (o.max_stamps < 2)
    throw std::invalid_argument(fmt::format(
        "simprof: GraphKernelTimerOptions.max_stamps = {} (expected >= 2)", o.max_stamps));
  return o;
}

// One row, reused by every sampled step, copied into a reading of the ring on the step's stream.
detail::RingShape ring_shape(const GraphKernelTimerOptions& o) {
  const std::size_t row = o.max_stamps * sizeof(unsigned long long);
  return {1, row, o.ring, row, detail::Publish::kOnStream};
}

}  // namespace

namespace detail {
const void* node_stamp_kernel_fn() noexcept {
  return reinterpret_cast<const void*>(&node_stamp_kernel);
}
}  // namespace detail

GraphKernelTimer::Impl::Impl(StepProfiler& p, cudaStream_t s, GraphKernelTimerOptions o)
    : StampTimer("GraphKernelTimer", p, s, schedule_of(checked(o)), ring_shape(checked(o))),
      options(checked(o)),
      pending(options.ring),
      ranges(options.max_stamps) {
  // The number CUPTI's kernel records give the stream (no subscription), else the runtime's.
  if (cuptiGetStreamIdEx(nullptr, stream, 0, &stream_id) != CUPTI_SUCCESS) {
    unsigned long long id = 0;
    if (cudaStreamGetId(stream, &id) != cudaSuccess) (void)cudaGetLastError();
    stream_id = static_cast<std::uint32_t>(id);
  }
  open_stages.reserve(StepProfiler::kMaxDepth + 1);
  // The engine's record starts zeroed: a copy made during a sampled step finds its row clean.
  hop_ns = detail::measured_once(device_id, &StampCost::hop_ns, [this] {
    return detail::measure_hop(stream, detail::node_stamp_kernel_fn());
  });
  ties.emplace(*this);
}

void GraphKernelTimer::Impl::on_step_begin(std::uint64_t step, std::int64_t) {
  sampled = false;
  begun = true;
  step_now = step;
  if (!schedule.sampled(step) &&
      !(window_open && options.trace_every_step &&  // window_open: set on this thread
        !detail::kernel_tracer_window_open()))      // CUPTI records the window's kernels anyway
    return;
  const std::lock_guard<std::mutex> lock(mu);
  begin_sample(step);
}

void GraphKernelTimer::Impl::begin_sample(std::uint64_t step) noexcept {
  const bool in_window = window_open;
  detail::ReadbackRing& readings = engine.readings();
  if (readings.full()) {
    poll_locked();
    // A window's step waits for the oldest reading rather than leave itself out of the trace.
    if (readings.full() && in_window && options.trace_every_step) {
      if (cudaEventSynchronize(readings.arrival(readings.next())) != cudaSuccess)
        (void)cudaGetLastError();
      poll_locked();
    }
    if (readings.full()) {  // the host is a whole ring of samples ahead of the GPU: this one is
                            // left out
      ++n_dropped;
      if (in_window) ++window_lost;
      voice.warn_counted(
          said_ring,
          "sampled step {} is left out: the host is {} sampled replays ahead of the GPU "
          "(the ring's size); pace the loop (simprof::cuda::GpuProfile, a StepPacer or a "
          "DeviceStageTimer) or raise GraphKernelTimerOptions.ring",
          step, options.ring);
      return;
    }
  }
  // The row zeroed on the stream before the step's work (the last one's publication is before it
  // there): a copy's begin slot then says whether it ran in this step, and a slot left 0 that its
  // stamp did not run.
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess ||
      status != cudaStreamCaptureStatusNone) {
    (void)cudaGetLastError();
    ++n_missed;
    return;  // the step itself is being captured by someone: no eager work can go in it
  }
  if (ranges.used() > 0) {
    const cudaError_t e =
        cudaMemsetAsync(row(), 0, ranges.used() * sizeof(unsigned long long), stream);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      ++n_missed;
      if (in_window) ++window_lost;
      voice.warn_counted(said, "cudaMemsetAsync of the stamps failed: {}", cudaGetErrorName(e));
      return;
    }
  }
  sampled = true;
  sampled_step = step;
  sampled_traced = in_window;
  sampled_gen = window_gen;
  if (in_window) ++window_sampled;
}

void GraphKernelTimer::Impl::place_captured(StageId open) noexcept {
  CaptureInfo ci;
  if (capture_info(capture_stream, ci) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  if (ci.status != cudaStreamCaptureStatusActive || ci.graph == nullptr) return;
  try {
    if (capture_graph != ci.graph) {
      capture_graph = ci.graph;
      placed.clear();
    }
    if (detail::all_nodes(ci.graph, scratch) != cudaSuccess) {
      (void)cudaGetLastError();
      return;
    }
    for (const cudaGraphNode_t n : scratch) placed.emplace(n, open);  // kept where already placed
  } catch (...) {  // out of memory: those nodes take the stage open at the capture's end
  }
}

void GraphKernelTimer::Impl::on_stage_begin(StageId id, std::int64_t) {
  if (!capturing) return;
  place_captured(open_stages.empty() ? kNoStage : open_stages.back());
  if (open_stages.size() < open_stages.capacity()) open_stages.push_back(id);  // never allocates
}

void GraphKernelTimer::Impl::on_stage_end(StageId, std::int64_t) {
  if (!capturing) return;
  place_captured(open_stages.empty() ? kNoStage : open_stages.back());
  if (open_stages.size() > 1) open_stages.pop_back();
}

void GraphKernelTimer::Impl::capture_begins(cudaStream_t s) noexcept {
  StampTimer::capture_begins(s);
  capture_graph = nullptr;
  placed.clear();
  open_stages.clear();  // reserved: kMaxDepth + 1 never allocates
  open_stages.push_back(prof.innermost_stage());
}

GraphKernelTimer::GraphKernelTimer(StepProfiler& prof, cudaStream_t stream,
                                   GraphKernelTimerOptions options)
    : impl_(std::make_unique<Impl>(prof, stream, options)) {}
GraphKernelTimer::~GraphKernelTimer() = default;

std::shared_ptr<GraphInstrumentation> GraphKernelTimer::instrumentation() const noexcept {
  return impl_->ties->hook();
}

}  // namespace simprof::cuda
