// SPDX-License-Identifier: MIT
// GpuProfile: the whole GPU truth of a step loop from one object — the FPS line on the GPU's clock,
// device stage times, the per-kernel table of replayed graphs and, when asked, trace windows on a
// schedule.
//
/* clang-format off */
//   simprof::cuda::GpuProfile gpu(prof, stream);             // paced; FPS line on the GPU clock
//   simprof::cuda::GraphCache graphs(stream);                // gets the stamps by itself
//   for (int i = 0; i < n; ++i) { auto step = prof.step(); graphs.run({n_envs}, body); }
//   gpu.finish();
//   fmt::print("{}", gpu.report());                          // stages and kernels on the GPU
/* clang-format on */
//
// The tools live in the profiler (StepProfiler::own_tools): a GraphCache on the profile's stream
// run inside one of its steps attaches them itself, whenever either was made, and the profiler
// destroys them first when it goes. So the GpuProfile, the caches and the profiler may be made and
// destroyed in any order; once the profiler is gone, the GpuProfile's accessors throw
// std::logic_error saying so. One per profiler (a second throws). Inside it, made in this order:
//   * a StepPacer (max_in_flight steps on the GPU at most; the FPS line from its step ends);
//   * a DeviceStageTimer paced by that pacer (unless stage_sample_every is 0);
//   * a GraphKernelTimer (unless kernel_sample_every is 0), paced by the same bound, sampling
//     other steps than the stage timer where the two rates allow it (offset gcd / 2: 8 of every
//     128 by default; with a stage timer on every step, the kernel timer's steps run its copy);
//   * with `trace`, a TraceSession (its windows handed over beside the loop) and a KernelTracer
//     (CUPTI) writing the scheduled windows.
// A graph another framework captures (torch.cuda.graph, Warp, CuPy) is stamped through capturing()
// and stamp() (foreign_graph.hpp does it for one tool).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "simprof/cuda/graphs/foreign_graph.hpp"
#include "simprof/profiler/step_profiler.hpp"
#include "simprof/trace/session.hpp"

namespace simprof::cuda {

class DeviceStageTimer;
class GraphKernelTimer;
class StepPacer;
class KernelTracer;

/// What a GpuProfile measures, and how often.
struct GpuProfileOptions {
  int max_in_flight = 2;        ///< steps enqueued and unfinished on the GPU at most (>= 1)
  bool fps_from_device = true;  ///< the FPS line from the GPU's step ends
  /// Device stage times on one step in this many (>= 0; 0: none).
  int stage_sample_every = 16;
  /// The per-kernel table: stamped copies of replayed graphs on one step in this many (>= 0; 0:
  /// none). Its sampled steps are offset from the stage timer's (8 of each 128).
  int kernel_sample_every = 128;
  /// Trace windows on `trace->schedule`, written under `trace->dir`: the CPU stages and every
  /// kernel through CUPTI, each window handed over beside the loop (`background` is set). None by
  /// default.
  std::optional<TraceOptions> trace;
  /// Or a session of yours (not owned; it may go first: its kernel tracer leaves it then) whose
  /// windows get every kernel through CUPTI. Not both.
  TraceSession* trace_session = nullptr;
};

/// A framework's capture noted by every tool of a GpuProfile (GpuProfile::capturing()), until
/// end() or destruction.
class ProfiledCapture {
 public:
  /// Ends the noting (once).
  void end() noexcept { notes_.clear(); }

 private:
  friend class GpuProfile;
  std::vector<std::unique_ptr<ForeignCapture>> notes_;
};

/// A framework's graph stamped by every tool of a GpuProfile (GpuProfile::stamp()).
class ProfiledGraph {
 public:
  ProfiledGraph() = default;
  /// The copies of `copies`, tried in their order.
  explicit ProfiledGraph(std::vector<InstrumentedGraph> copies) : copies_(std::move(copies)) {}
  /// Launches the copy of the first tool that samples this step on `stream` and returns true;
  /// false: the caller replays its own graph. Throws CudaError when the launch fails.
  bool launch(cudaStream_t stream);
  /// Launches of the stamped copies so far.
  std::uint64_t launches() const noexcept;
  /// Whether any tool made a copy (none does of a capture without stages).
  bool instrumented() const noexcept;

 private:
  friend class GpuProfile;
  std::vector<InstrumentedGraph> copies_;
};

/// Device-side truth of a StepProfiler's loop from one object (see the header comment).
class GpuProfile {
 public:
  /// Makes the tools and gives them to `prof`; `stream` is the one the loop's steps run on, of the
  /// current device. Throws std::invalid_argument for bad options, std::logic_error when `prof`
  /// owns tools already, CudaError when CUDA fails.
  GpuProfile(StepProfiler& prof, cudaStream_t stream, GpuProfileOptions options = {});
  /// Takes the tools back from the profiler (when it is still there) and destroys them.
  ~GpuProfile();
  GpuProfile(const GpuProfile&) = delete;
  GpuProfile& operator=(const GpuProfile&) = delete;

  /// Waits for the GPU and reads everything (the last steps' times, the last FPS sample, the
  /// kernels' readings): call at the end of a run, before reading results.
  void finish();
  /// The device stage table and the kernel table, with what each is over and what was lost.
  std::string report() const;
  /// Mean device seconds of `stage` ("step", "period" or a stage's name); NaN: not timed.
  double mean(std::string_view stage) const;

  /// The device stage timer, for what the summary does not say. Throws std::logic_error when
  /// switched off (stage_sample_every 0) and, as every accessor, once the profiler is gone.
  DeviceStageTimer& stages() const;
  /// The kernel timer; throws std::logic_error when switched off (kernel_sample_every 0).
  GraphKernelTimer& kernels() const;
  /// The pacer that bounds the steps in flight and times them on the GPU.
  const StepPacer& pacer() const;
  /// The trace session (its own with `trace`, yours with `trace_session`; null with neither).
  TraceSession* trace() const;
  /// Whether the profiler (and so the tools) is still there.
  bool alive() const noexcept;
  /// The options it was made with.
  const GpuProfileOptions& options() const noexcept { return options_; }

  /// While the returned object lives, a framework's capture on `stream` (already begun) is noted
  /// by every tool; then stamp() the graph it produced.
  [[nodiscard]] ProfiledCapture capturing(cudaStream_t stream) const;
  /// Every tool's stamped copy of `captured` (not owned; it must stay as it is).
  ProfiledGraph stamp(cudaGraph_t captured) const;

  struct Tools;  // src/cuda/gpu_profile.cpp

 private:
  Tools& tools() const;
  std::weak_ptr<Tools> tools_;
  StepProfiler* prof_;
  GpuProfileOptions options_;
};

}  // namespace simprof::cuda
