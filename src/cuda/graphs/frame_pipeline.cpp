// SPDX-License-Identifier: MIT
#include "simprof/cuda/graphs/frame_pipeline.hpp"

#include <stdexcept>
#include <string>

#include "simprof/cuda/error.hpp"

namespace simprof::cuda {

FramePipeline::FramePipeline(Stage producer, Stage consumer, FramePipelineOptions options)
    : producer_(std::move(producer)), consumer_(std::move(consumer)), options_(options) {
  if (!producer_ || !consumer_)
    throw std::invalid_argument("FramePipeline: the producer and the consumer must be callable");
  if (options_.in_flight < 2)
    throw std::invalid_argument("FramePipeline: in_flight = " + std::to_string(options_.in_flight) +
                                " (expected >= 2)");
  if (options_.warmup < 0)
    throw std::invalid_argument("FramePipeline: warmup = " + std::to_string(options_.warmup) +
                                " (expected >= 0)");
  int lowest = 0, highest = 0;  // numerically: greatest priority is the smallest number
  if (options_.overlap && options_.prioritize_producer)
    SIMPROF_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lowest, &highest));
  SIMPROF_CUDA_CHECK(
      cudaStreamCreateWithPriority(&producer_stream_, cudaStreamNonBlocking, highest));
  consumer_stream_ = producer_stream_;
  if (options_.overlap)
    SIMPROF_CUDA_CHECK(
        cudaStreamCreateWithPriority(&consumer_stream_, cudaStreamNonBlocking, lowest));
  GraphCacheOptions cache_options;
  cache_options.warmup = options_.warmup;
  cache_options.capacity = 2;  // one executable per slot
  producer_cache_ = std::make_unique<GraphCache>(producer_stream_, cache_options);
  consumer_cache_ = std::make_unique<GraphCache>(consumer_stream_, cache_options);
  for (int s = 0; s < 2; ++s) {
    SIMPROF_CUDA_CHECK(cudaEventCreateWithFlags(&produced_[s], cudaEventDisableTiming));
    SIMPROF_CUDA_CHECK(cudaEventCreateWithFlags(&released_[s], cudaEventDisableTiming));
  }
  const auto n = static_cast<std::size_t>(options_.in_flight);
  start_.assign(n, nullptr);
  end_.assign(n, nullptr);
  pending_.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    SIMPROF_CUDA_CHECK(cudaEventCreate(&start_[i]));
    SIMPROF_CUDA_CHECK(cudaEventCreate(&end_[i]));
  }
  latencies_.reserve(options_.max_latency_samples);
}

FramePipeline::~FramePipeline() {
  cudaStreamSynchronize(producer_stream_);
  if (consumer_stream_ != producer_stream_) cudaStreamSynchronize(consumer_stream_);
  producer_cache_.reset();
  consumer_cache_.reset();
  for (auto* v : {&start_, &end_})
    for (cudaEvent_t e : *v) cudaEventDestroy(e);
  for (int s = 0; s < 2; ++s) {
    cudaEventDestroy(produced_[s]);
    cudaEventDestroy(released_[s]);
  }
  if (consumer_stream_ != producer_stream_) cudaStreamDestroy(consumer_stream_);
  cudaStreamDestroy(producer_stream_);
}

void FramePipeline::collect(std::size_t i) {
  if (!pending_[i]) return;
  pending_[i] = 0;
  SIMPROF_CUDA_CHECK(cudaEventSynchronize(end_[i]));
  float ms = 0;
  SIMPROF_CUDA_CHECK(cudaEventElapsedTime(&ms, start_[i], end_[i]));
  if (latencies_.size() < options_.max_latency_samples)
    latencies_.push_back(static_cast<double>(ms) * 1e-3);
  else
    ++dropped_;
}

void FramePipeline::submit() {
  const int slot = static_cast<int>(frames_ & 1u);
  const std::size_t i = frames_ % start_.size();
  collect(i);  // frame k - in_flight's pair: finished long ago in a steady pipeline
  const GraphKey key{1, static_cast<std::uint64_t>(slot)};
  cudaStream_t p = producer_stream_, c = consumer_stream_;
  // The slot's last reader (consumer k - 2) must be done before the producer overwrites it.
  if (options_.overlap && frames_ >= 2)
    SIMPROF_CUDA_CHECK(cudaStreamWaitEvent(p, released_[slot], 0));
  SIMPROF_CUDA_CHECK(cudaEventRecord(start_[i], p));
  producer_cache_->run(key, [&](cudaStream_t s) { producer_(s, slot); });
  if (options_.overlap) {
    SIMPROF_CUDA_CHECK(cudaEventRecord(produced_[slot], p));
    SIMPROF_CUDA_CHECK(cudaStreamWaitEvent(c, produced_[slot], 0));
  }
  consumer_cache_->run(key, [&](cudaStream_t s) { consumer_(s, slot); });
  if (options_.overlap) SIMPROF_CUDA_CHECK(cudaEventRecord(released_[slot], c));
  SIMPROF_CUDA_CHECK(cudaEventRecord(end_[i], c));
  pending_[i] = 1;
  ++frames_;
}

void FramePipeline::drain() {
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(producer_stream_));
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(consumer_stream_));
  // Oldest first: frame order.
  const std::size_t n = start_.size();
  for (std::size_t j = 0; j < n; ++j) collect((frames_ + j) % n);
}

}  // namespace simprof::cuda
