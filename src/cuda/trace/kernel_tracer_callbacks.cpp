// SPDX-License-Identifier: MIT
// CUPTI's callbacks into the process's one KernelTracer: its activity buffers, its clock, and the
// stages of graph nodes as they are made and cloned. None throws into CUPTI.
#include "kernel_tracer_impl.hpp"

namespace simprof::cuda {

namespace {

using Impl = KernelTracer::Impl;

// CUPTI's activity callbacks carry no context: they reach the one tracer through the process's
// CUPTI state (CuptiProcess::tracer()).
Impl* the_tracer() noexcept { return static_cast<Impl*>(detail::CuptiProcess::get().tracer()); }

}  // namespace

namespace detail {

uint64_t CUPTIAPI tracer_timestamp() noexcept {
  const Impl* impl = the_tracer();
  return static_cast<uint64_t>(impl ? impl->time_base.now_ns() : TimeBase().now_ns());
}

void CUPTIAPI tracer_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  *buffer = nullptr;
  *size = 0;
  Impl* impl = the_tracer();
  if (!impl) return;
  *buffer = impl->pool.acquire();  // null when all are out: CUPTI drops records and counts them
  if (*buffer) *size = impl->pool.buffer_bytes();
}

void CUPTIAPI tracer_buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t,
                                      size_t valid) {
  Impl* impl = the_tracer();
  if (!impl || !buffer) return;
  std::lock_guard<std::mutex> lock(impl->mutex);
  if (impl->running) {  // a flush outside a window only recycles
    try {
      impl->records.parse(buffer, valid);
    } catch (...) {
      ++impl->dropped;  // nothing may throw into CUPTI; a record that could not be kept is counted
    }
  }
  size_t lost = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &lost) == CUPTI_SUCCESS)
    impl->dropped += lost;
  impl->pool.release(buffer);
}

// CUPTI's graph-node callbacks (detail::set_graph_node_handler): the stage of every node made
// inside a stage on the loop's thread, carried to its clones. Never throws into CUPTI.
void tracer_graph_node(void* context, CUpti_CallbackDomain, CUpti_CallbackId id, const void* data) {
  auto* impl = static_cast<Impl*>(context);
  if (impl == nullptr || data == nullptr) return;
  const auto* rd = static_cast<const CUpti_ResourceData*>(data);
  const auto* gd = static_cast<const CUpti_GraphData*>(rd->resourceDescriptor);
  std::uint64_t node = 0;
  if (gd == nullptr || gd->node == nullptr || cuptiGetGraphNodeId(gd->node, &node) != CUPTI_SUCCESS)
    return;
  try {
    if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
      // A clone's node (an instantiation's, a cudaGraphClone's) takes its original's stage in
      // the CLONED callback, not the stage open when it was made.
      if (gd->originalNode != nullptr || gd->graphExec != nullptr) return;
      if (std::this_thread::get_id() != impl->loop_thread || detail::OwnNodes::active()) return;
      const StageId stage = impl->prof.innermost_stage();
      if (stage == kNoStage) return;
      std::string name(impl->prof.stage_name(stage));
      std::lock_guard<std::mutex> lock(impl->nodes_mutex);
      impl->node_stage[node] = std::move(name);
    } else if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
      std::uint64_t original = 0;
      if (gd->originalNode == nullptr ||
          cuptiGetGraphNodeId(gd->originalNode, &original) != CUPTI_SUCCESS)
        return;
      std::lock_guard<std::mutex> lock(impl->nodes_mutex);
      if (const auto it = impl->node_stage.find(original); it != impl->node_stage.end())
        impl->node_stage[node] = it->second;
      else
        impl->node_stage.erase(node);
    } else if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING) {
      // Forgotten after the next window is collected: its kernels may be in a window that a
      // session's writer thread has yet to collect (ids are never reused). Beyond 65,536
      // waiting, forgotten now.
      std::lock_guard<std::mutex> lock(impl->nodes_mutex);
      if (impl->node_stage.count(node) == 0) return;
      impl->destroyed.push_back(node);
      if (impl->destroyed.size() > (std::size_t{1} << 16)) impl->forget_destroyed();
    }
  } catch (...) {  // out of memory: that node's kernels have no stage
  }
}

}  // namespace detail

}  // namespace simprof::cuda
