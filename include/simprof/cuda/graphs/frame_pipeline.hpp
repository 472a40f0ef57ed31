// SPDX-License-Identifier: MIT
// FramePipeline: a producer graph (physics) and a consumer graph (rendering) on two streams, joined
// by events so that the consumer of frame k overlaps the producer of frame k + 1.
//
/* clang-format off */
//   simprof::cuda::FramePipeline pipe(
//       [&](cudaStream_t s, int slot) { engine.enqueue_step(s);
//                                       publish_positions(s, snapshot[slot]); },
//       [&](cudaStream_t s, int slot) { render_from(s, snapshot[slot]); });
//   for (int k = 0; k < frames; ++k) pipe.submit();
//   pipe.drain();
//   auto lat = simprof::summarize(pipe.latencies());   // seconds per frame: mean, sigma, p95, ...
/* clang-format on */
//
// The producer must publish what the consumer reads into a slot of its own (two slots,
// double-buffered): the producer keeps updating its state for frame k + 1 while the consumer reads
// frame k, so the consumer must never read the producer's working state. The pipeline orders:
//   * consumer k starts after producer k ends (event "produced[slot]");
//   * producer k starts after consumer k - 2 ends, the last reader of slot k % 2 (event
//     "released[slot]").
// Each stage runs through its own GraphCache keyed by the slot, so after warm-up a frame is two
// graph launches, two event records and two event waits. With overlap = false both run on the
// producer stream in order (the serialised baseline, same graphs).
//
// Latency of frame k: from the producer's start to the consumer's end, timed with CUDA events and
// collected off the critical path (when the event pair is reused, or at drain()).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/runtime/stream.hpp"

namespace simprof::cuda {

/// How a FramePipeline runs its two stages and how many latencies it keeps.
struct FramePipelineOptions {
  bool overlap = true;  ///< two streams joined by events; false: one stream, in order
  /// The producer's stream gets the device's highest priority, the consumer's the lowest. Without
  /// it the block scheduler dispatches a large consumer grid before the next producer grid that
  /// became ready at the same moment, and the two barely overlap (measured: docs/techniques.md).
  bool prioritize_producer = true;
  int warmup = 2;      ///< eager runs of each graph before capture (GraphCacheOptions::warmup)
  int in_flight = 64;  ///< frames whose latency events can be pending (>= 2)
  std::size_t max_latency_samples = 1 << 20;  ///< kept; later samples are counted as dropped
};

/// A producer graph and a consumer graph on two streams, frame k's consumer overlapping frame
/// k + 1's producer, each frame's latency timed (see the header comment).
class FramePipeline {
 public:
  /// One stage of a frame: enqueues its work on the stream given, using double-buffer slot `slot`
  /// (0 or 1) for what the producer publishes and the consumer reads.
  using Stage = std::function<void(cudaStream_t, int slot)>;

  /// Throws std::invalid_argument for an empty stage, in_flight < 2 or warmup < 0.
  FramePipeline(Stage producer, Stage consumer, FramePipelineOptions options = {});
  ~FramePipeline();
  FramePipeline(const FramePipeline&) = delete;
  FramePipeline& operator=(const FramePipeline&) = delete;

  /// Enqueues one frame (producer, then consumer); never waits for the GPU except to reuse the
  /// event pair of frame k - in_flight, normally long finished.
  void submit();
  /// Waits for every submitted frame and collects the pending latencies.
  void drain();

  /// Frames submitted so far.
  std::uint64_t frames() const noexcept { return frames_; }
  /// Seconds per completed frame, in frame order (allocated up front: no allocation per frame).
  const std::vector<double>& latencies() const noexcept { return latencies_; }
  /// Latency samples beyond max_latency_samples, not kept.
  std::uint64_t dropped_latencies() const noexcept { return dropped_; }
  /// Forgets the latencies collected so far (pending frames are still collected).
  void clear_latencies() noexcept { latencies_.clear(); }

  /// Whether the stages run on two streams (FramePipelineOptions::overlap).
  bool overlapped() const noexcept { return options_.overlap; }
  /// The stream the producer runs on.
  cudaStream_t producer_stream() const noexcept { return producer_stream_.get(); }
  /// The stream the consumer runs on (the producer's when not overlapped).
  cudaStream_t consumer_stream() const noexcept {
    return consumer_stream_ ? consumer_stream_->get() : producer_stream_.get();
  }
  /// The producer's graphs, one per slot (counters, diagnosis).
  const GraphCache& producer_graphs() const noexcept { return producer_cache_; }
  /// The consumer's graphs, one per slot (counters, diagnosis).
  const GraphCache& consumer_graphs() const noexcept { return consumer_cache_; }

 private:
  void collect(std::size_t ring_index);

  // Declared in the order they are made; destroyed in reverse (events, caches, then streams).
  Stage producer_, consumer_;
  FramePipelineOptions options_;
  Stream producer_stream_;
  std::optional<Stream> consumer_stream_;  // none when not overlapped: both run on the producer's
  GraphCache producer_cache_, consumer_cache_;
  Event produced_[2] = {Event(cudaEventDisableTiming), Event(cudaEventDisableTiming)};
  Event released_[2] = {Event(cudaEventDisableTiming), Event(cudaEventDisableTiming)};
  std::vector<Event> start_, end_;  // ring of in_flight timing pairs
  std::vector<char> pending_;
  std::vector<double> latencies_;
  std::uint64_t frames_ = 0, dropped_ = 0;
};

}  // namespace simprof::cuda
