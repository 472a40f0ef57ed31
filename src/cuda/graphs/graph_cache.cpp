// SPDX-License-Identifier: MIT
#include "simprof/cuda/graphs/graph_cache.hpp"

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "graph_memory.hpp"
#include "simprof/base/config.hpp"
#include "simprof/base/log.hpp"
#include "simprof/cuda/runtime/error.hpp"

namespace simprof::cuda {

using detail::seconds_since;

using detail::graph_memory_in_use;

namespace {

std::string key_text(const GraphKey& k) {
  return k.user ? fmt::format("n_envs={} key={:#x}", k.n_envs, k.user)
                : fmt::format("n_envs={}", k.n_envs);
}

// The driver's cuCtxGetCurrent, reached through the runtime (simprof links no libcuda).
using GetContext = CUresult (*)(CUcontext*);

}  // namespace

GraphCache::GraphCache(cudaStream_t stream, GraphCacheOptions options,
                       const std::shared_ptr<GraphInstrumentation>& instrumentation)
    : stream_(stream), device_(bind_device(stream, "GraphCache")), options_(options) {
  if (instrumentation) tools_.push_back(instrumentation);
  if (options.warmup < 0)
    throw std::invalid_argument(
        fmt::format("simprof: GraphCacheOptions.warmup = {} (expected >= 0)", options.warmup));
  if (options.capacity == 0)
    throw std::invalid_argument("simprof: GraphCacheOptions.capacity = 0 (expected >= 1)");
  // Null where the driver has none: run() then asks the runtime for the device instead.
  get_context_ = detail::driver_entry_point("cuCtxGetCurrent");
  CUcontext ctx = nullptr;
  if (get_context_ != nullptr && reinterpret_cast<GetContext>(get_context_)(&ctx) == CUDA_SUCCESS)
    context_ = ctx;
}

void GraphCache::check_device() const {
  CUcontext now = nullptr;
  if (get_context_ != nullptr && reinterpret_cast<GetContext>(get_context_)(&now) == CUDA_SUCCESS &&
      now == context_)
    return;
  int current = 0;
  SIMPROF_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device_)
    throw std::logic_error(fmt::format(
        "simprof: GraphCache of device {} run with device {} current: a graph captured on one "
        "device is never replayed on another (cudaSetDevice({}) first, or one cache per device)",
        device_, current, device_));
}

GraphCache::~GraphCache() {
  if (logger_ || counters_.captures)
    (logger_ ? logger_ : simprof::default_logger())
        ->debug(
            "simprof: graph cache: {} captures ({} failed), {} instantiations, {} updates ({} "
            "refused), {} replays, {} eager fallback runs, {} evictions",
            counters_.captures, counters_.failed_captures, counters_.instantiations,
            counters_.updates, counters_.update_refusals, counters_.replays, counters_.eager_runs,
            counters_.evictions);
  if (!entries_.empty()) cudaStreamSynchronize(stream_);  // executables may still be running
}

void GraphCache::set_logger(std::shared_ptr<spdlog::logger> logger) { logger_ = std::move(logger); }

GraphCache::Entry* GraphCache::find(const GraphKey& key) noexcept {
  for (auto& e : entries_)
    if (e->key == key) return e.get();
  return nullptr;
}
const GraphCache::Entry* GraphCache::find(const GraphKey& key) const noexcept {
  for (const auto& e : entries_)
    if (e->key == key) return e.get();
  return nullptr;
}

bool GraphCache::captured(const GraphKey& key) const noexcept {
  const Entry* e = find(key);
  return e && e->exec;
}
bool GraphCache::fell_back(const GraphKey& key) const noexcept {
  const Entry* e = find(key);
  return e && e->fallback;
}
std::optional<CaptureDiagnosis> GraphCache::diagnosis(const GraphKey& key) const {
  const Entry* e = find(key);
  return e ? e->diagnosis : std::nullopt;
}
std::optional<ColdStart> GraphCache::cold_start(const GraphKey& key) const {
  const Entry* e = find(key);
  return e ? e->cold : std::nullopt;
}
std::size_t GraphCache::size() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(entries_.begin(), entries_.end(), [](const auto& e) { return bool(e->exec); }));
}

void GraphCache::launch(Entry& e) {
  cudaGraphExec_t exec = e.exec.get();
  for (const Entry::Copy& c : e.instrumented) {
    if (const auto tool = c.tool.lock(); tool && tool->instrumented_launch()) {
      exec = c.exec.get();
      ++counters_.instrumented_replays;
      break;
    }
  }
  SIMPROF_CUDA_CHECK(cudaGraphLaunch(exec, stream_));
  ++counters_.replays;
}

GraphCache::Entry* GraphCache::lru_with_exec(const Entry* except) noexcept {
  Entry* best = nullptr;
  for (auto& e : entries_)
    if (e.get() != except && e->exec && (!best || e->last_use < best->last_use)) best = e.get();
  return best;
}

void GraphCache::clear() {
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (auto& e : entries_) release(*e);
  entries_.clear();
  last_ = nullptr;
}

void GraphCache::run(const GraphKey& key, const Body& body) {
  check_device();
  adopt_step_tools();
  // The steady state: the same key as last time, already captured. A compare and one launch.
  if (last_ != nullptr && last_->exec && last_->key == key && last_->epoch == epoch_) {
    last_->last_use = ++tick_;
    launch(*last_);
    return;
  }
  Entry* e = find(key);
  if (e == nullptr) {
    // Keys without an executable are only metadata (warm-up count, diagnosis); keep them bounded.
    if (entries_.size() >= 4 * options_.capacity) {
      auto victim =
          std::min_element(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) {
            return bool(a->exec) != bool(b->exec) ? !a->exec : a->last_use < b->last_use;
          });
      entries_.erase(victim);
    }
    entries_.push_back(std::make_unique<Entry>());
    e = entries_.back().get();
    e->key = key;
  }
  e->last_use = ++tick_;
  last_ = e;
  if (e->exec && e->epoch != epoch_) {
    // Made before the tool now attached (or with one since detached). The recapture sets the
    // epoch when it succeeds; one that throws is tried again at the key's next run.
    if (instrumentation()) {
      capture_and_launch(*e, body, /*in_place=*/true);
      return;
    }
    e->epoch = epoch_;
    e->instrumented.clear();
  }
  if (e->exec) {
    launch(*e);
    return;
  }
  if (e->fallback) {
    body(stream_);
    ++counters_.eager_runs;
    return;
  }
  if (e->runs < options_.warmup) {
    ++e->runs;
    ++counters_.warmup_runs;
    body(stream_);
    return;
  }
  capture_and_launch(*e, body, /*in_place=*/false);
}

void GraphCache::recapture(const GraphKey& key, const Body& body) {
  Entry* e = find(key);
  if (e == nullptr || e->fallback || !e->exec) {
    run(key, body);
    return;
  }
  e->last_use = ++tick_;
  capture_and_launch(*e, body, /*in_place=*/true);
}

void GraphCache::fall_back(Entry& e, CaptureDiagnosis d, const Body& body) {
  ++counters_.failed_captures;
  if (!options_.eager_fallback) throw CaptureError(std::move(d));
  (logger_ ? logger_ : simprof::default_logger())
      ->warn("simprof: cannot capture the step for {}: {}. This shape runs eagerly from now on.",
             key_text(e.key), d.message);
  e.fallback = true;
  e.diagnosis = std::move(d);
  release(e);
  body(stream_);  // the step still happens, once
  ++counters_.eager_runs;
}

void GraphCache::capture_and_launch(Entry& e, const Body& body, bool in_place) {
  Tools tools;
  for (const auto& t : tools_)
    if (auto alive = t.lock()) tools.push_back(std::move(alive));
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<CaptureDiagnosis> failed;
  GraphHandle graph = capture(body, tools, failed);  // destroyed on every way out, a throw included
  if (failed) {
    fall_back(e, std::move(*failed), body);
    return;
  }
  ColdStart cold;
  cold.capture_s = seconds_since(t0);
  ++counters_.captures;
  counters_.capture_s += cold.capture_s;
  // Each measuring tool's nodes go into a copy of its own; the graph replayed on other steps stays
  // as captured. The key's old copies go first (their tools are told, and may reuse what they
  // held for them).
  e.instrumented.clear();
  ToolCopies copies;
  for (const auto& tool : tools)
    if (cudaGraph_t c = tool->instrumented_copy(graph.get()))
      copies.emplace_back(GraphHandle(c), tool);

  // What the executable holds in graph allocations: the driver's count before the executable is
  // made (or updated) and after its first launch.
  const std::int64_t graph_memory_before = graph_memory_in_use(device_);
  if (!update_exec(e, graph.get(), in_place, cold)) {
    const auto t2 = std::chrono::steady_clock::now();
    GraphExecHandle exec;
    SIMPROF_CUDA_CHECK(cudaGraphInstantiate(exec.out(), graph.get(), 0));
    cold.instantiate_s = seconds_since(t2);
    counters_.instantiate_s += cold.instantiate_s;
    ++counters_.instantiations;
    e.exec = std::move(exec);
  }
  graph.reset();
  e.instrumented.clear();
  e.epoch = epoch_;
  instantiate_copies(e, copies, cold);
  e.cold = cold;
  (logger_ ? logger_ : simprof::default_logger())
      ->debug("simprof: graph for {}: captured in {:.1f} us, {} in {:.1f} us", key_text(e.key),
              cold.capture_s * 1e6, cold.updated ? "updated" : "instantiated",
              (cold.updated ? cold.update_s : cold.instantiate_s) * 1e6);
  launch(e);
  e.graph_memory += std::max<std::int64_t>(0, graph_memory_in_use(device_) - graph_memory_before);
}

}  // namespace simprof::cuda
