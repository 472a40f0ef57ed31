// SPDX-License-Identifier: MIT
// DeviceStageTimer's kernels: the begin and boundary stamps of a stamped copy, the eager stamp, and
// the publication of a step's record into its reading.
#include "simprof/cuda/timing/device_clock.cuh"
#include "stage_timer_impl.hpp"

namespace simprof::cuda {

namespace {

using detail::kNotTimed;
using detail::kStageBegin;
using detail::kStageEnd;
using detail::StepRecord;

// Starts step k's record at time t (once: an eager stamp before a replayed graph may have started
// it).
__device__ void begin_record(StepRecord& r, unsigned k, unsigned long long t) {
  if (r.step == k && r.t_begin != 0) return;
  r.step = k;
  r.count = 0;
  r.overflow = 0;
  r.t_begin = t;
}

// A replayed graph's first node on a stamped copy.
__global__ void begin_kernel(StepRecord* recs, const unsigned* step, unsigned ring) {
  const unsigned long long t = global_timer_ns();
  const unsigned k = *step;
  if (k == kNotTimed) return;
  begin_record(recs[k % ring], k, t);
}

// A programmatic dependent (launch_eager_stamp) runs as soon as it is on the GPU; this waits until
// the work before it on the stream has completed. A kernel launched without the attribute (or on a
// GPU before compute capability 9.0) passes straight through.
__device__ __forceinline__ void wait_for_the_work_before() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// An eager boundary's stamp: the time the stream reached it, stored at the place the host chose;
// the step's first also starts its record (`begin`, tagged `k`). One store: its cost is a stage's.
__global__ void eager_stamp_kernel(unsigned long long* at, StepRecord* begin, unsigned k) {
  wait_for_the_work_before();
  const unsigned long long t = global_timer_ns();
  *at = t;
  if (begin != nullptr) begin_record(*begin, k, t);
}

__global__ void stamp_kernel(detail::StampArgs a) {
  const unsigned long long t = global_timer_ns();
  const unsigned k = *a.step;
  if (k == kNotTimed) return;
  StepRecord& r = a.recs[k % a.ring];
  const unsigned first = atomicAdd(&r.count, static_cast<unsigned>(a.n));
  for (int i = 0; i < a.n; ++i) {
    const unsigned e = first + static_cast<unsigned>(i);
    if (e < DeviceStageTimer::kMaxStamps)
      r.entries[e] = detail::StampEntry{a.stage[i], a.kind[i], t};
    else
      atomicAdd(&r.overflow, 1u);
  }
}

// On the timer's own stream, after the step ended: copies step `k`'s record (or an empty one, when
// the step stamped nothing) into its reading's slot (`m`, mapped), with the step's end time.
__global__ void publish_kernel(const StepRecord* recs, StepRecord* to, unsigned ring,
                               unsigned long long k, unsigned n_eager) {
  __shared__ unsigned long long t_end;
  if (threadIdx.x == 0) t_end = global_timer_ns();
  __syncthreads();
  const StepRecord& r = recs[k % ring];
  StepRecord& m = *to;
  const bool mine = r.step == static_cast<unsigned>(k) && r.t_begin != 0;
  const unsigned n =
      mine ? (r.count < DeviceStageTimer::kMaxStamps ? r.count : DeviceStageTimer::kMaxStamps) : 0u;
  const unsigned n_e = mine ? n_eager : 0u;
  for (unsigned i = threadIdx.x; i < n; i += blockDim.x) m.entries[i] = r.entries[i];
  for (unsigned i = threadIdx.x; i < n_e; i += blockDim.x) m.eager[i] = r.eager[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    m.step = static_cast<unsigned>(k);
    m.count = n;
    m.eager_count = n_e;
    m.overflow = mine ? r.overflow : 0u;
    m.t_begin = mine ? r.t_begin : 0ull;
    m.t_end = t_end;
  }
}

}  // namespace

namespace detail {
const void* begin_kernel_fn() noexcept { return reinterpret_cast<const void*>(&begin_kernel); }
const void* stamp_kernel_fn() noexcept { return reinterpret_cast<const void*>(&stamp_kernel); }
const void* eager_stamp_kernel_fn() noexcept {
  return reinterpret_cast<const void*>(&eager_stamp_kernel);
}
const void* publish_kernel_fn() noexcept { return reinterpret_cast<const void*>(&publish_kernel); }
}  // namespace detail

}  // namespace simprof::cuda
