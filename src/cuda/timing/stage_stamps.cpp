// SPDX-License-Identifier: MIT
// DeviceStageTimer's stage boundaries: noted for the stamped copy of a captured step (one leaf
// stamp after the work captured before them), or stamped eagerly on the stream; and the copy
// itself. The kernels and the publish kernel are in stage_kernels.cu, the publication's launch in
// stamp_ring.cpp.
#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "../cupti/cupti_hub.hpp"  // kernel_tracer_window_open
#include "simprof/base/clock.hpp"
#include "simprof/base/log.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/runtime/handle.hpp"
#include "stage_timer_impl.hpp"

namespace simprof::cuda {

using detail::kStageBegin;
using detail::kStageEnd;

void DeviceStageTimer::Impl::note_unstamped(std::uint64_t step) noexcept {
  ++n_unstamped;
  voice.warn(
      unstamped_said,
      "sampled step {} ran no stage boundary and no stamped graph, "
      "while earlier steps had stages: a graph replayed without the timer's stamps (or another "
      "tool's copy ran), so its stages are not timed in this step, or a step without stages. "
      "Give the GraphCache the timer's instrumentation() "
      "(cache.attach(timer.instrumentation())), "
      "or use simprof::cuda::GpuProfile, which wires it (said once; counted in unstamped())",
      step);
}

void DeviceStageTimer::Impl::on_stage_begin(StageId id, std::int64_t) { boundary(id, kStageBegin); }

void DeviceStageTimer::Impl::on_stage_end(StageId id, std::int64_t) { boundary(id, kStageEnd); }

void DeviceStageTimer::Impl::boundary(StageId stage, int kind) noexcept {
  step_boundaries = true;
  // An unsampled step outside GraphCache's captures: nothing to do, not even a query.
  if (skip && !capturing) return;
  // Right after an eager stamp's launch, outside any capture: that stamp's instant, no query.
  if (!capturing && merged_eager(stage, kind)) return;
  CaptureInfo ci;
  cudaError_t e = capture_info(capturing ? capture_stream : stream, ci);
  if (e != cudaSuccess) return failed("cudaStreamGetCaptureInfo", e);
  if (ci.status != cudaStreamCaptureStatusActive) {
    // Eager: on the stream, in order, in sampled steps only.
    if (!skip) eager_stamp(stage, kind);
    return;
  }
  detail::StampArgs a{};
  a.recs = engine.record<detail::StepRecord>(0);
  a.step = engine.tag();
  a.ring = static_cast<unsigned>(options.ring);
  a.n = 1;
  a.stage[0] = static_cast<int>(stage);
  a.kind[0] = kind;
  // Captured: noted for the instrumented copy, as a leaf after the work captured so far. A capture
  // is noted whether or not its step is sampled: the copy serves the sampled steps to come.
  detail::CaptureStamps& c = capture;
  try {
    if (c.id != ci.id) {
      c = detail::CaptureStamps{};
      c.id = ci.id;
      c.graph = ci.graph;
    }
    if (!c.stamps.empty()) {
      detail::CaptureStamps::Stamp& last = c.stamps.back();
      if (last.args.n < detail::kPerNode && last.deps.size() == ci.n_deps &&
          std::equal(ci.deps, ci.deps + ci.n_deps, last.deps.begin())) {
        // No work since the last stamp: the same instant, one more entry.
        last.args.stage[last.args.n] = a.stage[0];
        last.args.kind[last.args.n] = kind;
        ++last.args.n;
        return;
      }
    }
    c.stamps.push_back({std::vector<cudaGraphNode_t>(ci.deps, ci.deps + ci.n_deps), a});
  } catch (...) {
    c = detail::CaptureStamps{};  // out of memory: this capture gets no stamps
    failed("noting a stamp (out of memory)", cudaErrorMemoryAllocation);
  }
}

// Within merge_within_ns of the latest eager stamp's launch: nothing can have been launched
// between, nor a capture begun; the boundary takes that stamp's instant (joined on the host). The
// clock is read only with merging on.
bool DeviceStageTimer::Impl::merged_eager(StageId stage, int kind) noexcept {
  Slot& s = slots[slot_now];
  if (options.merge_within_ns == 0 || skip || s.eager_stamps == 0 ||
      s.n_aliases >= detail::kMaxAliases ||
      simprof::detail::steady_now_ns() - last_eager_ns >= options.merge_within_ns)
    return false;
  s.aliases[s.n_aliases++] = detail::MergedMark{s.eager_stamps, static_cast<int>(stage), kind};
  ++n_merged;
  return true;
}

// An eager boundary's own stamp on the stream: its time goes to the step's record at the
// boundary's place among the step's eager stamps, what it marks stays here. The step's first eager
// stamp also starts the record. (The record is the host's slot, as the publication's.)
void DeviceStageTimer::Impl::eager_stamp(StageId stage, int kind) noexcept {
  Slot& s = slots[slot_now];
  if (s.eager_stamps >= kMaxStamps) {
    s.eager_lost = true;  // counted in dropped() when the step is joined
    return;
  }
  detail::StepRecord& r = engine.record<detail::StepRecord>(0)[slot_now];
  if (s.eager_stamps == 0) {  // one launch mode for the whole step (its calibrated cost)
    plain_now = detail::kernel_tracer_window_open();
    s.plain = plain_now;
  }
  if (const cudaError_t e =
          launch_eager_stamp(&r.eager[s.eager_stamps], began_eagerly ? nullptr : &r, step_tag);
      e != cudaSuccess) {
    (void)cudaGetLastError();
    s.eager_lost = true;
    failed("an eager stamp's cudaLaunchKernelEx", e);
    return;
  }
  began_eagerly = true;
  s.eager_at[s.eager_stamps++] = detail::StageMark{static_cast<int>(stage), kind};
  if (options.merge_within_ns != 0) last_eager_ns = simprof::detail::steady_now_ns();
}

// The copy: the captured graph's clone, a begin node (the default priority), and each noted stamp
// as a leaf after its captured work and the begin node (the greatest priority). The capture's
// notes are spent once it is made.
cudaGraph_t DeviceStageTimer::Impl::stamped_copy(cudaGraph_t graph) {
  if (capture.graph != graph || capture.stamps.empty()) return nullptr;
  detail::StampedCopy copy(graph);
  detail::StepRecord* recs = engine.record<detail::StepRecord>(0);
  const unsigned* step = engine.tag();
  unsigned ring = static_cast<unsigned>(options.ring);
  void* begin_args[] = {&recs, &step, &ring};
  int default_priority = 0;
  const cudaGraphNode_t begin =
      copy.add_stamp(detail::begin_kernel_fn(), begin_args, nullptr, 0, default_priority);
  // A stamp is a leaf beside the next work: when that work fills the GPU, a stamp of the default
  // priority waits for its blocks to drain (a stage then reads short; docs/python.md). At the
  // greatest priority the block scheduler takes it at the next free slot.
  int priority = greatest_priority();
  std::vector<cudaGraphNode_t> heads;  // the stamps noted before any captured work
  std::vector<cudaGraphNode_t> deps;
  for (detail::CaptureStamps::Stamp& s : capture.stamps) {
    deps.clear();
    for (const cudaGraphNode_t d : s.deps) deps.push_back(copy.clone_of(d));
    deps.push_back(begin);
    void* args[] = {&s.args};
    const cudaGraphNode_t node =
        copy.add_stamp(detail::stamp_kernel_fn(), args, deps.data(), deps.size(), priority);
    if (s.deps.empty()) heads.push_back(node);
  }
  // The stamps noted before any captured work (the first stage's begin) come before the graph's
  // roots, not beside them: a root branch of one tiny kernel is not run first, and it can run
  // well into the work it was to mark (the first stage then reads short; docs/python.md).
  if (heads.empty()) heads.push_back(begin);
  for (const cudaGraphNode_t h : heads) copy.before_roots(h);
  capture = detail::CaptureStamps{};
  return copy.release();
}

}  // namespace simprof::cuda
