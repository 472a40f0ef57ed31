// SPDX-License-Identifier: MIT
// What a CUDA trace source adds to a trace's header: Kineto's deviceProperties of the devices its
// spans ran on (each once, whichever source adds it first) and the CUDA and CUPTI versions.
// Private to src/cuda.
#pragma once

#include <cuda_runtime_api.h>
#include <cupti.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "simprof/trace/span.hpp"

namespace simprof::cuda::detail {

/// Adds `devices`' properties (those not in the trace yet) and the versions to `trace`.
inline void describe_devices(Trace& trace, const std::vector<std::uint32_t>& devices) {
  for (const std::uint32_t d : devices) {
    const int id = static_cast<int>(d);
    if (std::any_of(trace.devices.begin(), trace.devices.end(),
                    [&](const DeviceProperties& p) { return p.id == id; }))
      continue;
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, id) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    DeviceProperties dp;
    dp.id = id;
    dp.name = p.name;
    dp.total_global_mem = p.totalGlobalMem;
    dp.compute_major = p.major;
    dp.compute_minor = p.minor;
    dp.max_threads_per_block = p.maxThreadsPerBlock;
    dp.max_threads_per_multiprocessor = p.maxThreadsPerMultiProcessor;
    dp.regs_per_block = p.regsPerBlock;
    dp.warp_size = p.warpSize;
    dp.shared_mem_per_block = p.sharedMemPerBlock;
    dp.num_sms = p.multiProcessorCount;
    trace.devices.push_back(std::move(dp));
  }
  int v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess) trace.versions["cuda_driver_version"] = v;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) trace.versions["cuda_runtime_version"] = v;
  std::uint32_t cupti = 0;
  if (cuptiGetVersion(&cupti) == CUPTI_SUCCESS) trace.versions["cupti_version"] = cupti;
}

}  // namespace simprof::cuda::detail
