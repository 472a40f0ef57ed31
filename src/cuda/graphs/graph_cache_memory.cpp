// SPDX-License-Identifier: MIT
// GraphCache's graph-allocation memory: what its executables hold and what releasing them gives
// back to the device.
#include <algorithm>
#include <cstdint>

#include "graph_memory.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"

namespace simprof::cuda {

using detail::graph_memory_attr;
using detail::graph_memory_in_use;

void GraphCache::release(Entry& e) {
  if (!e.exec && e.instrumented.empty()) return;
  if (e.graph_memory == 0) {  // no memory nodes: nothing to give back, no driver query
    e.exec.reset();
    e.instrumented.clear();
    return;
  }
  // A destroyed executable's graph memory goes back to the device's graph pool; trimming hands
  // what no other graph uses back to the OS. Given back: what left the pool's reservation (or, if
  // the driver keeps it reserved, what stopped being in use).
  const std::int64_t used = graph_memory_in_use(device_);
  const std::int64_t reserved = graph_memory_attr(device_, cudaGraphMemAttrReservedMemCurrent);
  e.exec.reset();
  e.instrumented.clear();
  if (cudaDeviceGraphMemTrim(device_) != cudaSuccess) cudaGetLastError();
  const std::int64_t freed =
      std::max({std::int64_t{0}, used - graph_memory_in_use(device_),
                reserved - graph_memory_attr(device_, cudaGraphMemAttrReservedMemCurrent)});
  counters_.graph_memory_released += static_cast<std::uint64_t>(freed);
  e.graph_memory = 0;
}

std::int64_t GraphCache::graph_memory() const noexcept {
  std::int64_t sum = 0;
  for (const auto& e : entries_) sum += e->graph_memory;
  return sum;
}

std::int64_t GraphCache::graph_memory(const GraphKey& key) const noexcept {
  const Entry* e = find(key);
  return e ? e->graph_memory : 0;
}

}  // namespace simprof::cuda
