// SPDX-License-Identifier: MIT
#include "simprof/cuda/graphs/frame_pipeline.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "simprof/cuda/runtime/error.hpp"

namespace simprof::cuda {

namespace {

const FramePipelineOptions& validated(const FramePipeline::Stage& producer,
                                      const FramePipeline::Stage& consumer,
                                      const FramePipelineOptions& o) {
  if (!producer || !consumer)
    throw std::invalid_argument(
        "simprof: FramePipeline: the producer and the consumer must be callable");
  if (o.in_flight < 2)
    throw std::invalid_argument(
        "simprof: FramePipeline: in_flight = " + std::to_string(o.in_flight) + " (expected >= 2)");
  if (o.warmup < 0)
    throw std::invalid_argument("simprof: FramePipeline: warmup = " + std::to_string(o.warmup) +
                                " (expected >= 0)");
  return o;
}

// {lowest, highest} stream priority for the consumer and the producer (numerically, the greatest
// priority is the smallest number); {0, 0} when the producer is not to be preferred.
std::pair<int, int> priorities(const FramePipelineOptions& o) {
  int lowest = 0, highest = 0;
  if (o.overlap && o.prioritize_producer)
    SIMPROF_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
  return {lowest, highest};
}

GraphCacheOptions cache_options(const FramePipelineOptions& o) {
  GraphCacheOptions c;
  c.warmup = o.warmup;
  c.capacity = 2;  // one executable per slot
  return c;
}

}  // namespace

FramePipeline::FramePipeline(Stage producer, Stage consumer, FramePipelineOptions options)
    : producer_(std::move(producer)),
      consumer_(std::move(consumer)),
      options_(validated(producer_, consumer_, options)),
      producer_stream_(cudaStreamNonBlocking, priorities(options_).second),
      consumer_stream_(options_.overlap
                           ? std::optional<Stream>(std::in_place, cudaStreamNonBlocking,
                                                   priorities(options_).first)
                           : std::nullopt),
      producer_cache_(producer_stream_.get(), cache_options(options_)),
      consumer_cache_(consumer_stream(), cache_options(options_)) {
  const auto n = static_cast<std::size_t>(options_.in_flight);
  start_.reserve(n);
  end_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    start_.emplace_back();
    end_.emplace_back();
  }
  pending_.assign(n, 0);
  latencies_.reserve(options_.max_latency_samples);
}

FramePipeline::~FramePipeline() {
  // Work may be in flight on both streams: let it end before the events and graphs go.
  cudaStreamSynchronize(producer_stream_.get());
  if (consumer_stream_) cudaStreamSynchronize(consumer_stream_->get());
}

void FramePipeline::collect(std::size_t i) {
  if (!pending_[i]) return;
  pending_[i] = 0;
  end_[i].synchronize();
  const double ms = end_[i].elapsed_ms_since(start_[i]);
  if (latencies_.size() < options_.max_latency_samples)
    latencies_.push_back(ms * 1e-3);
  else
    ++dropped_;
}

void FramePipeline::submit() {
  const int slot = static_cast<int>(frames_ & 1u);
  const std::size_t i = frames_ % start_.size();
  collect(i);  // frame k - in_flight's pair: finished long ago in a steady pipeline
  const GraphKey key{1, static_cast<std::uint64_t>(slot)};
  cudaStream_t p = producer_stream(), c = consumer_stream();
  // The slot's last reader (consumer k - 2) must be done before the producer overwrites it.
  if (options_.overlap && frames_ >= 2)
    SIMPROF_CUDA_CHECK(cudaStreamWaitEvent(p, released_[slot], 0));
  start_[i].record(p);
  producer_cache_.run(key, [&](cudaStream_t s) { producer_(s, slot); });
  if (options_.overlap) {
    produced_[slot].record(p);
    SIMPROF_CUDA_CHECK(cudaStreamWaitEvent(c, produced_[slot], 0));
  }
  consumer_cache_.run(key, [&](cudaStream_t s) { consumer_(s, slot); });
  if (options_.overlap) released_[slot].record(c);
  end_[i].record(c);
  pending_[i] = 1;
  ++frames_;
}

void FramePipeline::drain() {
  producer_stream_.synchronize();
  if (consumer_stream_) consumer_stream_->synchronize();
  // Oldest first: frame order.
  const std::size_t n = start_.size();
  for (std::size_t j = 0; j < n; ++j) collect((frames_ + j) % n);
}

}  // namespace simprof::cuda
