// SPDX-License-Identifier: MIT
// GraphCache's measuring tools (graphs/instrumentation.hpp): attached by hand, or found in the step
// of the profiler that owns them (a GpuProfile's), and detached.
#include <algorithm>
#include <memory>

#include "simprof/base/config.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/profiler/step_profiler.hpp"

namespace simprof::cuda {

// The graph tools of the profiler whose step runs this (a GpuProfile's): attached once per set,
// to a cache on their stream.
void GraphCache::adopt_step_tools() noexcept {
  StepTools* t = StepProfiler::tools_in_step();
  if (SIMPROF_LIKELY(t == nullptr || t->serial() == step_tools_)) return;
  step_tools_ = t->serial();
  const auto* g = dynamic_cast<const GraphTools*>(t);
  // Stamps go to the tools' stream: a cache on another one (another device, a render stream) keeps
  // what it has.
  if (g != nullptr && g->stream() == stream_) try {
      for (const auto& tool : g->graph_tools()) attach(tool);
    } catch (...) {  // out of memory: this cache stays as it was (tried again with other tools)
    }
}

void GraphCache::attach(const std::shared_ptr<GraphInstrumentation>& tool) {
  if (!tool) return;
  tools_.erase(
      std::remove_if(tools_.begin(), tools_.end(), [](const auto& t) { return t.expired(); }),
      tools_.end());
  for (const auto& t : tools_)
    if (t.lock() == tool) return;  // attached already: nothing to capture again
  tools_.push_back(tool);
  ++epoch_;
}

void GraphCache::detach() noexcept {
  tools_.clear();
  for (auto& e : entries_) e->instrumented.clear();
}

void GraphCache::detach(const std::shared_ptr<GraphInstrumentation>& tool) noexcept {
  const auto gone = [&](const std::weak_ptr<GraphInstrumentation>& t) {
    return t.expired() || t.lock() == tool;
  };
  tools_.erase(std::remove_if(tools_.begin(), tools_.end(), gone), tools_.end());
  // Its executables go now (it is told); the other tools' stay, and nothing is captured again.
  for (auto& e : entries_)
    e->instrumented.erase(std::remove_if(e->instrumented.begin(), e->instrumented.end(),
                                         [&](const Entry::Copy& c) { return gone(c.tool); }),
                          e->instrumented.end());
}

std::shared_ptr<GraphInstrumentation> GraphCache::instrumentation() const noexcept {
  for (const auto& t : tools_)
    if (auto alive = t.lock()) return alive;
  return nullptr;
}

}  // namespace simprof::cuda
