// SPDX-License-Identifier: MIT
// MixedEngine: the CUDA engine's fused solver with the state *stored* in FP32, FP16 or BF16 and
// computed in FP32 (load, solve all substeps in registers, round on store): the usual way to halve
// a batched simulator's memory traffic, and the thing PrecisionChecker validates against the FP32
// reference (CudaEngine::enqueue_solver). With Storage::kFp32 it computes exactly what the
// reference computes, bit for bit: the harness itself adds no error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "demo_engine/cuda_engine.hpp"
#include "simprof/cuda/precision/device_comparer.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/precision/checker.hpp"

namespace simprof::engine {

enum class Storage { kFp32, kFp16, kBf16 };
std::string to_string(Storage s);
/// "fp32", "fp16" or "bf16"; throws std::invalid_argument naming the value otherwise.
Storage parse_storage(const std::string& s);

class MixedEngine {
 public:
  static constexpr int kMaxSpheres = 16;  ///< per env (the solver keeps an env in registers)

  /// The same initial state as CudaEngine(params, n_envs, stream, seed), rounded to `storage`.
  /// Throws std::invalid_argument for n_envs <= 0 or n_spheres outside [1, kMaxSpheres].
  MixedEngine(const Params& params, int n_envs, Storage storage, cudaStream_t stream,
              std::uint32_t seed = 1234);

  /// One step: every substep of the physics (solver_env) in one kernel, as
  /// CudaEngine::enqueue_solver(stream, nullptr). Capturable.
  void enqueue_step(cudaStream_t stream);
  /// Overwrites the state with `reference`'s (rounded to this storage): re-synchronises the
  /// variant after a validation.
  void load_from(const CudaEngine& reference, cudaStream_t stream);
  /// px, py, pz, vx, vy, vz concatenated, as floats (synchronises `stream`).
  std::vector<float> snapshot(cudaStream_t stream) const;
  Storage storage() const { return storage_; }
  /// The element type of the stored arrays, for cuda::DeviceComparer.
  cuda::Dtype dtype() const;
  /// Device pointer to stored array i: 0..5 = px, py, pz, vx, vy, vz (n_envs * n_spheres elements).
  const void* array(int i) const;
  /// Spheres in the batch: n_envs * n_spheres.
  std::size_t bodies() const;
  /// Bytes of state one step reads and writes (positions and velocities).
  std::size_t state_bytes() const;

 private:
  Params params_;
  int n_envs_;
  Storage storage_;
  // One raw buffer per array; each holds n_envs * n_spheres elements of the storage type.
  cuda::DeviceBuffer<unsigned char> px_, py_, pz_, vx_, vy_, vz_;
};

/// The variant's positions and velocities against the reference's, as PrecisionChecker sums.
struct StateSums {
  ErrorSums positions, velocities;
};
/// Reduced on the device by `comparer` (a few bytes come back), or, with comparer == nullptr,
/// through the host (both states copied back). Synchronises `stream`.
StateSums state_sums(const CudaEngine& reference, const MixedEngine& variant, cudaStream_t stream,
                     cuda::DeviceComparer* comparer);

}  // namespace simprof::engine
