// SPDX-License-Identifier: MIT
// Graphs another framework captures (torch.cuda.graph, Warp's ScopedCapture, CuPy's stream
// capture), with a measuring tool's nodes in them on sampled steps — what GraphCache does for the
// graphs it captures itself (graphs/instrumentation.hpp), for a graph the framework owns and
// replays.
//
// ForeignCapture tells the tool that a capture runs on the framework's stream: made after the
// framework began capturing and before the step's first stage, ended after its last stage. The
// tool notes where its nodes would go, touching nothing. InstrumentedGraph then takes the graph
// the capture produced (which must stay as it is: torch keeps it with keep_graph=True), has the
// tool make its copy and instantiates that copy. Each step, launch() runs the copy when the tool
// samples the step and returns true; otherwise it returns false and the framework replays its own
// executable (torch's g.replay()), which runs exactly as it would without the tool.
//
/* clang-format off */
//   {
//     simprof::cuda::ForeignCapture noted(timer.instrumentation(), capture_stream);
//     body(capture_stream);          // stage scopes inside, captured by the framework
//   }                                // the framework ends its capture: graph
//   simprof::cuda::InstrumentedGraph stamped(timer.instrumentation(), graph);
//   for (int i = 0; i < n; ++i) {
//     auto step = prof.step();
//     if (!stamped.launch(stream)) framework_replay();  // the framework's own executable
//   }
/* clang-format on */
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "simprof/cuda/graphs/instrumentation.hpp"
#include "simprof/cuda/runtime/handle.hpp"

namespace simprof::cuda {

/// RAII: `tool` is told a capture runs on `stream` (capture_begins) until end() or destruction
/// (capture_ends). The framework's capture must be active on `stream` while the step's stages run.
class ForeignCapture {
 public:
  /// Throws std::invalid_argument for a null tool, std::logic_error when `stream` is not
  /// capturing, CudaError when CUDA cannot say.
  ForeignCapture(std::shared_ptr<GraphInstrumentation> tool, cudaStream_t stream);
  ~ForeignCapture() { end(); }
  ForeignCapture(const ForeignCapture&) = delete;
  ForeignCapture& operator=(const ForeignCapture&) = delete;
  /// Ends the noting (once; later calls do nothing).
  void end() noexcept;

 private:
  std::shared_ptr<GraphInstrumentation> tool_;
};

/// A framework's captured graph with a measuring tool's copy of it (see the header comment).
class InstrumentedGraph {
 public:
  /// Makes the tool's copy of `captured` (not owned, not changed) and instantiates it. When the
  /// tool has none (no stage ran in the capture) instrumented() is false and launch() never runs
  /// anything. Throws std::invalid_argument for a null tool or graph, CudaError when the copy
  /// cannot be instantiated.
  InstrumentedGraph(std::shared_ptr<GraphInstrumentation> tool, cudaGraph_t captured);
  /// Tells the tool its copy is launched no more (GraphInstrumentation::copy_released).
  ~InstrumentedGraph();
  /// Moves the copy (the moved-from one launches nothing).
  InstrumentedGraph(InstrumentedGraph&&) noexcept = default;
  InstrumentedGraph& operator=(InstrumentedGraph&&) = delete;
  /// Launches the copy on `stream` when the tool samples this step and returns true; false: the
  /// caller replays its own graph. Throws CudaError when the launch fails.
  bool launch(cudaStream_t stream);
  /// Whether the tool made a copy.
  bool instrumented() const noexcept { return static_cast<bool>(exec_); }
  /// Launches of the copy so far.
  std::uint64_t launches() const noexcept { return launches_; }

 private:
  std::weak_ptr<GraphInstrumentation> tool_;  // the tool gone: the plain graph runs
  GraphHandle copy_;                          // the tool's copy, until the tool is told
  GraphExecHandle exec_;
  std::uint64_t launches_ = 0;
};

}  // namespace simprof::cuda
