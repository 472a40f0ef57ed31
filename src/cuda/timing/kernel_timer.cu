// SPDX-License-Identifier: MIT
// GraphKernelTimer's sampling and stamped copies: which steps run the copies, the copy of each
// captured graph with a stamp after every node, and each sampled step's row read back. The
// readings are in kernel_read.cpp, the trace windows in kernel_trace.cpp.
#include <cupti.h>  // cuptiGetGraphId / cuptiGetGraphNodeId: ids only, no subscription

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "../cupti/cupti_hub.hpp"  // OwnNodes: the stamps are not the stage's work
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

GraphKernelTimerOptions checked(GraphKernelTimerOptions o) {
  if (o.sample_every < 1)
    throw std::invalid_argument(fmt::format(
        "simprof: GraphKernelTimerOptions.sample_every = {} (expected >= 1)", o.sample_every));
  if (o.sample_offset == -1) o.sample_offset = o.sample_every > 8 ? 8 : 0;
  if (o.sample_offset < 0 || o.sample_offset >= o.sample_every)
    throw std::invalid_argument(
        fmt::format("simprof: GraphKernelTimerOptions.sample_offset = {} (expected -1, or 0 to "
                    "sample_every - 1 = {})",
                    o.sample_offset, o.sample_every - 1));
  if (o.ring < 1)
    throw std::invalid_argument("simprof: GraphKernelTimerOptions.ring = 0 (expected >= 1)");
  if (o.max_stamps < 2)
    throw std::invalid_argument(fmt::format(
        "simprof: GraphKernelTimerOptions.max_stamps = {} (expected >= 2)", o.max_stamps));
  return o;
}

}  // namespace

GraphKernelTimer::Impl::Impl(StepProfiler& p, cudaStream_t s, GraphKernelTimerOptions o)
    : prof(p),
      stream(s),
      device_id(bind_device(s, "GraphKernelTimer")),
      options(checked(o)),
      engine(s, 1, options.max_stamps * sizeof(unsigned long long), options.ring,
             options.max_stamps * sizeof(unsigned long long), detail::Publish::kOnStream),
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
    return detail::measure_hop(stream, reinterpret_cast<const void*>(&node_stamp_kernel));
  });
  ties.emplace(*this, prof, stream);
}

void GraphKernelTimer::Impl::on_step_begin(std::uint64_t step, std::int64_t) {
  sampled = false;
  begun = true;
  step_now = step;
  if (step % static_cast<std::uint64_t>(options.sample_every) !=
          static_cast<std::uint64_t>(options.sample_offset) &&
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
      say_once(said_ring,
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
      say("cudaMemsetAsync of the stamps failed: {}", cudaGetErrorName(e));
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

cudaGraph_t GraphKernelTimer::Impl::instrumented_copy(cudaGraph_t graph) noexcept {
  if (graph == nullptr) return nullptr;
  try {
    Copy c;
    cudaGraph_t copy = build_copy(graph, c);
    if (copy == nullptr) return nullptr;
    c.made = copy;
    c.made_in = step_now;
    const std::lock_guard<std::mutex> lock(mu);
    copies.push_back(std::move(c));
    return copy;
  } catch (const std::exception& e) {
    (void)cudaGetLastError();  // the graph replays without stamps; the error is said here
    ++n_unstamped;
    say("a graph replays without stamps: {}", e.what());
  } catch (...) {
    ++n_unstamped;
  }
  return nullptr;
}

cudaGraph_t GraphKernelTimer::Impl::build_copy(cudaGraph_t graph, Copy& c) {
  std::vector<cudaGraphNode_t> stamped;
  if (!plan_copy(graph, c, stamped)) return nullptr;
  cudaGraph_t copy = stamp_copy(graph, c, stamped);
  ranges.take(c.offset, c.slots());
  return copy;
}

// The graph's nodes that get a stamp (all but empty ones), each described with its stage and the
// slots its start comes from; the copy's range in the row. False: nothing to stamp, or no room.
bool GraphKernelTimer::Impl::plan_copy(cudaGraph_t graph, Copy& c,
                                       std::vector<cudaGraphNode_t>& stamped) {
  // Nodes not placed during the capture (no boundary after them, or a graph captured elsewhere)
  // take the stage open now, at the capture's end.
  const StageId open_now = open_stages.empty() ? kNoStage : open_stages.back();
  const bool known = graph == capture_graph;
  std::vector<cudaGraphNode_t> nodes;
  SIMPROF_CUDA_CHECK(detail::all_nodes(graph, nodes));
  std::unordered_map<cudaGraphNode_t, std::uint32_t> index_of;
  for (const cudaGraphNode_t n : nodes)
    index_of.emplace(n, static_cast<std::uint32_t>(index_of.size()));
  // The graph's shape in indices (what each node's start is comes from it: start_slots).
  detail::GraphShape shape;
  shape.deps.resize(nodes.size());
  shape.slot.assign(nodes.size(), detail::kNoSlot);
  std::vector<std::uint32_t> stamped_at;  // the stamped nodes' indices
  std::vector<cudaGraphNodeType> types;   // ... and types
  std::vector<cudaGraphNode_t> deps;
  std::vector<cudaGraphEdgeData> data;
  for (std::uint32_t i = 0; i < nodes.size(); ++i) {
    SIMPROF_CUDA_CHECK(detail::edges_of(nodes[i], false, deps, data));
    for (const cudaGraphNode_t d : deps) shape.deps[i].push_back(index_of.at(d));
    cudaGraphNodeType t{};
    SIMPROF_CUDA_CHECK(cudaGraphNodeGetType(nodes[i], &t));
    if (t == cudaGraphNodeTypeEmpty) continue;
    shape.slot[i] = kFirstNode + static_cast<std::uint32_t>(stamped.size());
    stamped.push_back(nodes[i]);
    stamped_at.push_back(i);
    types.push_back(t);
  }
  if (stamped.empty()) return false;
  const std::optional<std::size_t> at = ranges.find(kFirstNode + stamped.size());
  if (!at) {
    ++n_unstamped;
    say("a graph of {} nodes replays without stamps: the copies made hold {} of max_stamps = {}",
        stamped.size(), ranges.used(), options.max_stamps);
    return false;
  }
  c.offset = *at;
  c.graph_id = 0;
  std::uint32_t gid = 0;
  if (cuptiGetGraphId(graph, &gid) == CUPTI_SUCCESS) c.graph_id = gid;
  c.nodes.reserve(stamped.size());
  for (std::size_t i = 0; i < stamped.size(); ++i) {
    const cudaGraphNode_t n = stamped[i];
    NodeInfo info;
    detail::describe_node(n, types[i], device_id, info);
    const auto it = known ? placed.find(n) : placed.end();
    info.stage = it != placed.end() ? it->second : open_now;
    if (info.stage != kNoStage) info.stage_name = std::string(prof.stage_name(info.stage));
    std::uint64_t nid = 0;
    if (cuptiGetGraphNodeId(n, &nid) == CUPTI_SUCCESS) info.node_id = nid;
    info.index = stamped_at[i];
    info.starts = detail::start_slots(shape, stamped_at[i]);
    c.nodes.push_back(std::move(info));
  }
  return true;
}

// The copy: the graph's clone, a begin stamp and the hop stamp before its roots, a stamp after
// each node in the chain (all at the greatest priority).
cudaGraph_t GraphKernelTimer::Impl::stamp_copy(cudaGraph_t graph, const Copy& c,
                                               const std::vector<cudaGraphNode_t>& stamped) {
  const detail::OwnNodes own;  // a kernel tracer gives the stamps no stage
  detail::StampedCopy copy(graph);
  int priority = detail::greatest_priority();
  auto add_stamp = [&](std::size_t slot, const cudaGraphNode_t* after, std::size_t n_after) {
    unsigned long long* at = row() + c.offset + slot;
    void* args[] = {&at};
    return copy.add_stamp(reinterpret_cast<const void*>(&node_stamp_kernel), args, after, n_after,
                          priority);
  };
  const cudaGraphNode_t begin = add_stamp(kBeginSlot, nullptr, 0);
  const cudaGraphNode_t hop = add_stamp(kHopSlot, &begin, 1);
  copy.before_roots(hop);
  std::vector<cudaGraphNode_t> outs;
  std::vector<cudaGraphEdgeData> data;
  for (std::size_t i = 0; i < stamped.size(); ++i) {
    const cudaGraphNode_t mine = copy.clone_of(stamped[i]);
    SIMPROF_CUDA_CHECK(detail::edges_of(mine, true, outs, data));
    const cudaGraphNode_t s = add_stamp(kFirstNode + i, &mine, 1);
    // In the chain: what waited for the node waits for its stamp. An edge with data of its own (a
    // programmatic port) stays as it is, and the stamp is added before its node as well.
    for (std::size_t k = 0; k < outs.size(); ++k) {
      if (detail::default_edge(data[k])) copy.remove_edge(mine, outs[k]);
      copy.add_edge(s, outs[k]);
    }
  }
  return copy.release();
}

void GraphKernelTimer::Impl::capture_begins(cudaStream_t s) noexcept {
  capturing = true;
  capture_stream = s;
  capture_graph = nullptr;
  placed.clear();
  open_stages.clear();  // reserved: kMaxDepth + 1 never allocates
  open_stages.push_back(prof.innermost_stage());
}

void GraphKernelTimer::Impl::release(cudaGraph_t made) noexcept {
  const std::lock_guard<std::mutex> lock(mu);
  for (Copy& c : copies)
    if (c.made == made && !c.retired()) {
      // Inside a step it runs no more from this step on; between steps, from the next.
      c.retired_from = prof.in_step() ? step_now : step_now + 1;
      c.made = nullptr;  // the graph goes after this call: its address may be handed out again
      try {
        ranges.give_back(c.offset, c.slots());
      } catch (...) {  // out of memory: the range stays taken
      }
      return;
    }
}

GraphKernelTimer::GraphKernelTimer(StepProfiler& prof, cudaStream_t stream,
                                   GraphKernelTimerOptions options)
    : impl_(std::make_unique<Impl>(prof, stream, options)) {}
GraphKernelTimer::~GraphKernelTimer() = default;

std::shared_ptr<GraphInstrumentation> GraphKernelTimer::instrumentation() const noexcept {
  return impl_->ties->hook();
}

}  // namespace simprof::cuda
