// SPDX-License-Identifier: MIT
// The engine's physics and rendering as two graphs on two streams (dual_graph): the producer runs
// the fused solver and publishes the positions into a snapshot slot, the consumer draws the depth
// images from that slot, so rendering frame k overlaps the physics of frame k + 1 without ever
// reading a state the physics is writing.
//
//   simprof::engine::RenderPipeline pipe(engine, options);
//   for (int k = 0; k < frames; ++k) pipe.submit();
//   pipe.drain();
#pragma once

#include <vector>

#include "demo_engine/cuda_engine.hpp"
#include "simprof/cuda/graphs/frame_pipeline.hpp"
#include "simprof/cuda/runtime/buffer.hpp"

namespace simprof::engine {

class RenderPipeline {
 public:
  RenderPipeline(CudaEngine& engine, cuda::FramePipelineOptions options)
      : engine_(engine),
        snapshot_(make_snapshots(engine)),
        pipe_(
            [this](cudaStream_t s, int slot) {
              engine_.enqueue_solver(s, nullptr);
              engine_.publish_positions(s, x(slot), y(slot), z(slot));
            },
            [this](cudaStream_t s, int slot) {
              engine_.enqueue_render_from(s, x(slot), y(slot), z(slot));
            },
            options) {}

  void submit() { pipe_.submit(); }
  void drain() { pipe_.drain(); }
  cuda::FramePipeline& frames() { return pipe_; }
  /// The latest depth images (synchronises the render stream).
  std::vector<float> depth() { return engine_.depth(pipe_.consumer_stream()); }

 private:
  static std::vector<cuda::DeviceBuffer<float>> make_snapshots(const CudaEngine& e) {
    std::vector<cuda::DeviceBuffer<float>> v;
    for (int i = 0; i < 6; ++i) v.emplace_back(e.bodies());  // [slot * 3 + axis]
    return v;
  }
  float* x(int slot) { return snapshot_[static_cast<std::size_t>(3 * slot)].data(); }
  float* y(int slot) { return snapshot_[static_cast<std::size_t>(3 * slot + 1)].data(); }
  float* z(int slot) { return snapshot_[static_cast<std::size_t>(3 * slot + 2)].data(); }

  CudaEngine& engine_;
  std::vector<cuda::DeviceBuffer<float>> snapshot_;
  cuda::FramePipeline pipe_;
};

}  // namespace simprof::engine
