// SPDX-License-Identifier: MIT
// GraphInstrumentation: how a measuring tool that adds nodes of its own to a step while it is being
// captured (DeviceStageTimer's timestamps) gets them replayed only on the steps it samples.
//
// A GraphCache is given the tool (its constructor, or attach()) and holds it weakly. It tells the
// tool when a capture of a step begins and ends; the tool notes where its nodes would go (the
// capture's dependencies at each of its points) without touching the graph. After the capture the
// cache asks the tool for an instrumented copy of the graph (a clone with the tool's nodes added)
// and instantiates both the graph as captured and the copy. Before every launch it asks the tool
// which one this step runs. A step the tool does not sample thus runs exactly the graph it would
// run without the tool: its cost there is nothing; a sampled step pays for the tool's nodes.
//
/* clang-format off */
//   std::shared_ptr<simprof::cuda::GraphInstrumentation> tool = make_my_stamps();  // yours
//   simprof::cuda::GraphCache cache(stream, {}, tool);       // or cache.attach(tool)
/* clang-format on */
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "simprof/profiler/step_tools.hpp"

namespace simprof::cuda {

/// Where a capture on a stream stands: what a tool adding nodes to it needs.
struct CaptureInfo {
  /// Capturing, or not.
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;              ///< unique per capture
  cudaGraph_t graph = nullptr;            ///< the graph being captured into
  const cudaGraphNode_t* deps = nullptr;  ///< what the next captured work will depend on
  /// The edge data of those dependencies (may be null).
  const cudaGraphEdgeData* edges = nullptr;
  /// How many dependencies `deps` holds.
  std::size_t n_deps = 0;
};

/// cudaStreamGetCaptureInfo, in CUDA 13's spelling or CUDA 12's (_v3). The pointers stay valid
/// until the next call on the stream. Returns the call's error code; never throws.
cudaError_t capture_info(cudaStream_t stream, CaptureInfo& out) noexcept;

/// A measuring tool that adds nodes of its own to the steps a GraphCache captures (or another
/// framework does: graphs/foreign_graph.hpp).
class GraphInstrumentation {
 public:
  virtual ~GraphInstrumentation() = default;
  /// A capture of a step begins on `stream` (GraphCache's stream; for a graph another framework
  /// captures, the stream it captures on: ForeignCapture).
  virtual void capture_begins(cudaStream_t /*stream*/) noexcept {}
  /// That capture ended.
  virtual void capture_ends() noexcept {}
  /// A capture on the tool's stream just ended with `graph` (which must stay as it is): a new
  /// graph, owned by the caller, with the tool's nodes added; null when the tool has none for
  /// `graph`.
  virtual cudaGraph_t instrumented_copy(cudaGraph_t graph) noexcept = 0;
  /// Whether the step about to be launched runs the instrumented executable.
  virtual bool instrumented_launch() const noexcept = 0;
  /// A copy this tool made (`copy`, the graph instrumented_copy() returned, still alive during the
  /// call) is launched no more: its executable is being destroyed (a recapture, an eviction, the
  /// cache or the InstrumentedGraph gone).
  virtual void copy_released(cudaGraph_t /*copy*/) noexcept {}
};

/// A backend's tools that stamp graphs, owned by a StepProfiler (profiler/step_tools.hpp): a
/// GraphCache on their stream, run inside a step of that profiler, attaches each of them, in this
/// order, with no wiring of its own (cuda::GpuProfile is one).
class GraphTools : public StepTools {
 public:
  /// The tools a cache attaches.
  virtual std::vector<std::shared_ptr<GraphInstrumentation>> graph_tools() const = 0;
  /// The stream their stamps go to: only a cache on it attaches them.
  virtual cudaStream_t stream() const noexcept = 0;
};

}  // namespace simprof::cuda
