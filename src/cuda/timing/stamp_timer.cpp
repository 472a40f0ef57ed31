// SPDX-License-Identifier: MIT
#include "stamp_timer.hpp"

#include <exception>
#include <string>

#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/runtime/stream.hpp"

namespace simprof::cuda::detail {

StampTimer::StampTimer(const char* name, StepProfiler& p, cudaStream_t s, SampleSchedule sched,
                       const RingShape& ring)
    : prof(p),
      stream(s),
      device_id(bind_device(s, name)),
      schedule(sched),
      engine(s, ring.records, ring.record_bytes, ring.readings, ring.reading_bytes, ring.where),
      voice(name) {}

void StampTimer::capture_begins(cudaStream_t s) noexcept {
  capturing = true;
  capture_stream = s;
}

cudaGraph_t StampTimer::instrumented_copy(cudaGraph_t graph) noexcept {
  if (graph == nullptr) return nullptr;
  constexpr const char* kWhat = "instrumenting a graph (it replays without stamps)";
  try {
    return stamped_copy(graph);
  } catch (const std::exception& e) {  // said here, while the exception (its message) lives
    (void)cudaGetLastError();
    copy_failed();
    failed_with(kWhat, [&e] { return std::string(e.what()); });
  } catch (...) {
    copy_failed();
    failed(kWhat, cudaErrorMemoryAllocation);
  }
  return nullptr;
}

}  // namespace simprof::cuda::detail
