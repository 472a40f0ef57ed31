// SPDX-License-Identifier: MIT
// GraphKernelTimer's stamped copies: the copy of each captured graph with a stamp after every node
// (in the chain: what waited for the node waits for its stamp), its nodes described and their
// slots in the row reserved, and given back when the copy goes.
#include <cupti.h>  // cuptiGetGraphId / cuptiGetGraphNodeId: ids only, no subscription

#include <optional>
#include <unordered_map>

#include "kernel_timer_impl.hpp"
#include "simprof/cuda/runtime/error.hpp"

namespace simprof::cuda {

cudaGraph_t GraphKernelTimer::Impl::stamped_copy(cudaGraph_t graph) {
  Copy c;
  std::vector<cudaGraphNode_t> stamped;
  if (!plan_copy(graph, c, stamped)) return nullptr;
  GraphHandle copy(stamp_copy(graph, c, stamped));
  c.made = copy.get();
  c.made_in = step_now;
  const std::lock_guard<std::mutex> lock(mu);
  copies.push_back(std::move(c));  // the copy is destroyed if this throws
  ranges.take(copies.back().offset, copies.back().slots());
  return copy.release();
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
    voice.warn_counted(said,
                       "a graph of {} nodes replays without stamps: the copies made hold {} of "
                       "max_stamps = {}",
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
  detail::StampedCopy copy(graph);
  int priority = greatest_priority();
  auto add_stamp = [&](std::size_t slot, const cudaGraphNode_t* after, std::size_t n_after) {
    unsigned long long* at = row() + c.offset + slot;
    void* args[] = {&at};
    return copy.add_stamp(detail::node_stamp_kernel_fn(), args, after, n_after, priority);
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

}  // namespace simprof::cuda
