// SPDX-License-Identifier: MIT
#include "stamp_ring.hpp"

#include <cuda.h>  // the driver API's types: cuStreamWriteValue32 is reached through the runtime

#include "../cupti/cupti_hub.hpp"  // OwnNodes: the publication is not a stage's work
#include "simprof/cuda/runtime/error.hpp"

#include <stdexcept>
#include <vector>

namespace simprof::cuda::detail {

namespace {

using WriteValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

// cuStreamWriteValue32 without linking libcuda: the runtime hands out the driver's entry point.
WriteValue32 write_value32() {
  static const auto fn = reinterpret_cast<WriteValue32>(driver_entry_point("cuStreamWriteValue32"));
  return fn;
}

}  // namespace

StampRing::StampRing(cudaStream_t stream, std::size_t records, std::size_t record_bytes,
                     std::size_t readings, std::size_t reading_bytes, Publish where)
    : record_bytes_(record_bytes),
      records_(records * record_bytes),
      tag_(1),
      readings_(readings, reading_bytes) {
  if (record_bytes % 8 != 0)
    throw std::invalid_argument("simprof: StampRing: a record's size is a multiple of 8 bytes");
  if (where == Publish::kOnStream && records != 1)
    throw std::invalid_argument(
        "simprof: StampRing: a publication on the step's stream has one record");
  // Only a record per step needs the tag (a copy on the step's stream has one record).
  if (where == Publish::kBeside && write_value32() == nullptr)
    throw CudaError(cudaErrorNotSupported, "cudaGetDriverEntryPointByVersion(cuStreamWriteValue32)",
                    __FILE__, __LINE__);
  if (where == Publish::kBeside) side_.emplace();
  // On the timer's stream (a cudaMemset on the default stream is not ordered before a non-blocking
  // stream's work: compute-sanitizer's initcheck saw a reader overtake one), done before the first
  // step.
  SIMPROF_CUDA_CHECK(cudaMemsetAsync(records_.data(), 0, records_.bytes(), stream));
  SIMPROF_CUDA_CHECK(cudaMemsetAsync(tag_.data(), 0xff, tag_.bytes(), stream));  // kNotTimed
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void StampRing::set_publication(PublishKernel publish) {
  params_.func = const_cast<void*>(publish.fn);
  params_.gridDim = dim3(1);
  params_.blockDim = dim3(publish.threads);
  params_.kernelParams = publish.args;
  SIMPROF_CUDA_CHECK(cudaGraphCreate(graph_.out(), 0));
  const OwnNodes own;  // simprof's node: a kernel tracer gives it no stage
  SIMPROF_CUDA_CHECK(cudaGraphAddKernelNode(&node_, graph_.get(), nullptr, 0, &params_));
  SIMPROF_CUDA_CHECK(cudaGraphInstantiate(exec_.out(), graph_.get(), 0));
}

StampRing::~StampRing() {
  // Publications in flight write into readings_ (freed after this): wait; errors not thrown here.
  if (side_) cudaStreamSynchronize(side_->get());
  for (std::size_t i = 0; i < readings_.size(); ++i) cudaEventSynchronize(readings_.arrival(i));
}

int StampRing::write_tag(cudaStream_t stream, unsigned value) noexcept {
  const WriteValue32 write = write_value32();
  if (write == nullptr) return static_cast<int>(CUDA_ERROR_NOT_SUPPORTED);
  return static_cast<int>(write(reinterpret_cast<CUstream>(stream),
                                reinterpret_cast<CUdeviceptr>(tag_.data()), value, 0));
}

cudaError_t StampRing::publish(cudaStream_t stream, std::uint64_t step, std::size_t bytes,
                               const char*& what) noexcept {
  cudaError_t e = cudaSuccess;
  if (readings_.full()) {  // an unread reading would be overwritten: refused, loudly
    what = "the publication (every reading is still unread)";
    return cudaErrorNotReady;
  }
  if (!side_) {
    // A copy, not a kernel: between two replays of a GPU-bound graph it costs the stream less
    // (docs/performance.md).
    if (bytes > 0 &&
        (e = cudaMemcpyAsync(readings_.host<unsigned char>(readings_.next()), records_.data(),
                             bytes, cudaMemcpyDeviceToHost, stream)) != cudaSuccess) {
      what = "cudaMemcpyAsync (the publication)";
      return e;
    }
    if ((e = readings_.sent(stream, step)) != cudaSuccess)
      what = "cudaEventRecord (the publication's arrival)";
    return e;
  }
  // Once the step's work is done, beside it: off the path of the next step.
  if ((e = cudaEventRecord(step_done_.get(), stream)) != cudaSuccess) {
    what = "cudaEventRecord (the step's end, for the publication)";
    return e;
  }
  if ((e = cudaStreamWaitEvent(side_->get(), step_done_.get(), 0)) != cudaSuccess) {
    what = "cudaStreamWaitEvent (the publication's wait for its step)";
    return e;
  }
  // The arguments are copied into the executable here.
  if ((e = cudaGraphExecKernelNodeSetParams(exec_.get(), node_, &params_)) != cudaSuccess) {
    what = "cudaGraphExecKernelNodeSetParams (the publication's arguments)";
    return e;
  }
  if ((e = cudaGraphLaunch(exec_.get(), side_->get())) != cudaSuccess) {
    what = "the publication's cudaGraphLaunch";
    return e;
  }
  if ((e = readings_.sent(side_->get(), step)) != cudaSuccess)
    what = "cudaEventRecord (the publication's arrival)";
  return e;
}

void StampRing::synchronize() {
  if (side_) SIMPROF_CUDA_CHECK(cudaStreamSynchronize(side_->get()));
  std::vector<cudaEvent_t> sent;
  readings_.arrivals(sent, [](std::size_t) { return true; });
  for (const cudaEvent_t e : sent) SIMPROF_CUDA_CHECK(cudaEventSynchronize(e));
}

}  // namespace simprof::cuda::detail
