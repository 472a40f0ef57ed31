// SPDX-License-Identifier: MIT
#include "simprof/cuda/graphs/instrumentation.hpp"

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

namespace simprof::cuda {

cudaError_t capture_info(cudaStream_t stream, CaptureInfo& out) noexcept {
  out = CaptureInfo{};
#if CUDART_VERSION >= 13000
  return cudaStreamGetCaptureInfo(stream, &out.status, &out.id, &out.graph, &out.deps, &out.edges,
                                  &out.n_deps);
#else
  return cudaStreamGetCaptureInfo_v3(stream, &out.status, &out.id, &out.graph, &out.deps,
                                     &out.edges, &out.n_deps);
#endif
}

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::pair<cudaStream_t, std::weak_ptr<GraphInstrumentation>>> tools;
};

Registry& registry() {
  static Registry r;  // never destroyed before its users: function-local, made on first use
  return r;
}

}  // namespace

void register_graph_instrumentation(cudaStream_t stream,
                                    const std::shared_ptr<GraphInstrumentation>& tool) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.tools.erase(
      std::remove_if(r.tools.begin(), r.tools.end(),
                     [&](const auto& t) { return t.first == stream || t.second.expired(); }),
      r.tools.end());
  r.tools.emplace_back(stream, tool);
}

void unregister_graph_instrumentation(cudaStream_t stream,
                                      const GraphInstrumentation* tool) noexcept {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.tools.erase(std::remove_if(r.tools.begin(), r.tools.end(),
                               [&](const auto& t) {
                                 const auto p = t.second.lock();
                                 return t.first == stream && (!p || p.get() == tool);
                               }),
                r.tools.end());
}

std::shared_ptr<GraphInstrumentation> graph_instrumentation(cudaStream_t stream) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto& t : r.tools)
    if (t.first == stream) return t.second.lock();
  return nullptr;
}

}  // namespace simprof::cuda
