// SPDX-License-Identifier: MIT
#include "simprof/cuda/precision/device_comparer.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "simprof/cuda/runtime/error.hpp"

namespace simprof::cuda {

struct DeviceComparer::Accumulator {
  double diff2, ref2, var2;
  unsigned long long max_abs_bits;  // a non-negative double: its bits order like its value
  unsigned long long count_nan, count_inf, bad_reference, first_bad_reference;
};

namespace {

constexpr int kBlock = 256;

__device__ float load(const void* p, Dtype t, std::size_t i) {
  switch (t) {
    case Dtype::kF16:
      return __half2float(static_cast<const __half*>(p)[i]);
    case Dtype::kBF16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}

template <class T>
__device__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

__global__ void error_sums_kernel(const float* ref, const void* var, Dtype t, std::size_t n,
                                  DeviceComparer::Accumulator* acc) {
  double diff2 = 0, ref2 = 0, var2 = 0, max_abs = 0;
  unsigned long long nan = 0, inf = 0, bad = 0, first_bad = ~0ull;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const double a = ref[i];
    const double b = load(var, t, i);
    if (!isfinite(a)) {
      if (!bad) first_bad = i;
      ++bad;
    } else if (isnan(b)) {
      ++nan;
    } else if (isinf(b)) {
      ++inf;
    } else {
      const double d = b - a;
      diff2 += d * d;
      ref2 += a * a;
      var2 += b * b;
      max_abs = fmax(max_abs, fabs(d));
    }
  }
  diff2 = warp_sum(diff2);
  ref2 = warp_sum(ref2);
  var2 = warp_sum(var2);
  nan = warp_sum(nan);
  inf = warp_sum(inf);
  bad = warp_sum(bad);
  for (int o = 16; o > 0; o >>= 1) {
    max_abs = fmax(max_abs, __shfl_down_sync(0xffffffffu, max_abs, o));
    first_bad = min(first_bad, __shfl_down_sync(0xffffffffu, first_bad, o));
  }
  if ((threadIdx.x & 31) != 0) return;
  atomicAdd(&acc->diff2, diff2);
  atomicAdd(&acc->ref2, ref2);
  atomicAdd(&acc->var2, var2);
  atomicMax(&acc->max_abs_bits, static_cast<unsigned long long>(__double_as_longlong(max_abs)));
  if (nan) atomicAdd(&acc->count_nan, nan);
  if (inf) atomicAdd(&acc->count_inf, inf);
  if (bad) {
    atomicAdd(&acc->bad_reference, bad);
    atomicMin(&acc->first_bad_reference, first_bad);
  }
}

}  // namespace

DeviceComparer::DeviceComparer() : dev_(1), host_(1) {}

DeviceComparer::~DeviceComparer() = default;

ErrorSums DeviceComparer::sums(const float* reference, const void* variant, Dtype dtype,
                               std::size_t n, cudaStream_t stream) {
  if (n > 0 && (reference == nullptr || variant == nullptr))
    throw std::invalid_argument("simprof: DeviceComparer::sums: null buffer with n = " +
                                std::to_string(n));
  Accumulator& acc = host_[0];
  acc = Accumulator{};
  acc.first_bad_reference = ~0ull;
  dev_.copy_from_host(host_.data(), 1, stream);
  if (n > 0) {
    const std::size_t want = (n + kBlock - 1) / kBlock;
    const int blocks = static_cast<int>(want < 1024 ? want : 1024);
    error_sums_kernel<<<blocks, kBlock, 0, stream>>>(reference, variant, dtype, n, dev_.data());
    SIMPROF_CUDA_CHECK_LAUNCH("error_sums_kernel");
  }
  dev_.copy_to_host(host_.data(), 1, stream);
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
  ErrorSums s;
  s.count = n;
  s.diff2 = acc.diff2;
  s.ref2 = acc.ref2;
  s.var2 = acc.var2;
  double m = 0;
  static_assert(sizeof(m) == sizeof(acc.max_abs_bits));
  std::memcpy(&m, &acc.max_abs_bits, sizeof(m));
  s.max_abs = m;
  s.nan = static_cast<std::size_t>(acc.count_nan);
  s.inf = static_cast<std::size_t>(acc.count_inf);
  s.bad_reference = static_cast<std::size_t>(acc.bad_reference);
  if (s.bad_reference) s.first_bad_reference = static_cast<std::size_t>(acc.first_bad_reference);
  return s;
}

}  // namespace simprof::cuda
