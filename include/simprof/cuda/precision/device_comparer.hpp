// SPDX-License-Identifier: MIT
// DeviceComparer: PrecisionChecker's error sums computed on the GPU, where both buffers live. A
// validation then copies one small struct back instead of the whole state (figures:
// docs/techniques.md, techniques_bench BM_Validate).
//
/* clang-format off */
//   simprof::cuda::DeviceComparer cmp;
//   simprof::ErrorSums pos = cmp.sums(ref_x, var_x, simprof::cuda::Dtype::kF16, n, stream);
//   pos += cmp.sums(ref_y, var_y, simprof::cuda::Dtype::kF16, n, stream);
//   checker.record("positions", simprof::QuantityClass::kState, pos);
/* clang-format on */
//
// The sums are those of simprof::error_sums() (differences in double), up to the order of the
// additions.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/precision/error_sums.hpp"

namespace simprof::cuda {

/// Element type of a variant buffer.
enum class Dtype { kF32, kF16, kBF16 };

/// Computes PrecisionChecker's error sums on the GPU, where the reference and the variant
/// buffers live, copying back one small struct.
class DeviceComparer {
 public:
  DeviceComparer();   ///< allocates the device accumulator and a pinned copy
  ~DeviceComparer();  // defined where Accumulator is complete
  DeviceComparer(const DeviceComparer&) = delete;
  DeviceComparer& operator=(const DeviceComparer&) = delete;

  /// The error sums of `variant` (n elements of `dtype`, device memory) against `reference` (n
  /// floats, device memory), reduced on the device. Synchronises `stream`. Throws
  /// std::invalid_argument for null pointers with n > 0, CudaError for a failing CUDA call.
  ErrorSums sums(const float* reference, const void* variant, Dtype dtype, std::size_t n,
                 cudaStream_t stream);

  struct Accumulator;  ///< the device-side sums (defined in the .cu)

 private:
  DeviceBuffer<Accumulator> dev_;
  PinnedBuffer<Accumulator> host_;
};

}  // namespace simprof::cuda
