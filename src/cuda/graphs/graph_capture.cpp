// SPDX-License-Identifier: MIT
// GraphCache's cold path: capturing a body, updating or making its executable, instantiating the
// measuring tools' copies.
#include <chrono>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "graph_memory.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/runtime/error.hpp"

namespace simprof::cuda {

using detail::seconds_since;

GraphHandle GraphCache::capture(const Body& body, const Tools& tools,
                                std::optional<CaptureDiagnosis>& failed) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  SIMPROF_CUDA_CHECK(cudaStreamIsCapturing(stream_, &status));
  if (status != cudaStreamCaptureStatusNone)
    throw std::logic_error("simprof: GraphCache::run on a stream that is already capturing");

  SIMPROF_CUDA_CHECK(cudaStreamBeginCapture(stream_, options_.mode));
  for (const auto& tool : tools) tool->capture_begins(stream_);
  // The capture stream is non-blocking, so work on the legacy stream (a kernel launched without a
  // stream, a synchronous cudaMemcpy) would not touch the capture: it would run once, now, and be
  // missing from every replay. Forking the capture into a *blocking* sentinel stream makes any such
  // work depend on the capture, which CUDA refuses (cudaErrorStreamCaptureImplicit): the pitfall
  // becomes an error we can name. The fork adds no node to the graph.
  SIMPROF_CUDA_CHECK(cudaEventRecord(fork_.get(), stream_));
  SIMPROF_CUDA_CHECK(cudaStreamWaitEvent(sentinel_.get(), fork_.get(), 0));
  cudaError_t code = cudaSuccess;
  std::string call;
  CudaCall kind = CudaCall::kOther;
  std::string other;
  bool threw = false;
  try {
    body(stream_);
  } catch (const CudaError& ce) {
    threw = true;
    code = ce.code();
    call = ce.call();
    kind = ce.kind();
  } catch (const std::exception& ex) {
    threw = true;
    other = ex.what();
  } catch (...) {
    threw = true;
    other = "an exception of unknown type";
  }
  // The first error the body met (a call that returned an error it did not check), before ending
  // the capture overwrites it.
  const cudaError_t body_error = cudaGetLastError();
  // Join the sentinel back (an unjoined fork would fail the capture).
  cudaEventRecord(join_.get(), sentinel_.get());
  cudaStreamWaitEvent(stream_, join_.get(), 0);
  GraphHandle graph;
  const cudaError_t end = cudaStreamEndCapture(stream_, graph.out());
  for (const auto& tool : tools) tool->capture_ends();
  // Leave nothing behind: no stream still capturing, no graph, no pending non-sticky error.
  if (cudaStreamIsCapturing(stream_, &status) == cudaSuccess &&
      status != cudaStreamCaptureStatusNone) {
    GraphHandle stray;
    cudaStreamEndCapture(stream_, stray.out());
  }
  const cudaError_t after = cudaGetLastError();
  if (threw || end != cudaSuccess || !graph) {
    graph.reset();
    if (!threw) code = body_error != cudaSuccess ? body_error : (end != cudaSuccess ? end : after);
    CaptureDiagnosis d;
    if (!other.empty()) {
      d.pitfall = CapturePitfall::kException;
      d.code = end;
      d.message = fmt::format("{}: {}", to_string(d.pitfall), other);
    } else {
      d = diagnose_capture(code == cudaSuccess ? cudaErrorStreamCaptureInvalidated : code, kind,
                           call);
    }
    failed = std::move(d);
    return GraphHandle();
  }
  return graph;
}

bool GraphCache::update_exec(Entry& e, cudaGraph_t graph, bool in_place, ColdStart& cold) {
  // An executable to update: this key's own (recapture), or the least recently used one when full.
  Entry* donor = nullptr;
  if (in_place && e.exec)
    donor = &e;
  else if (size() >= options_.capacity)
    donor = lru_with_exec(&e);
  if (donor) {
    cudaGraphExecUpdateResultInfo info{};
    const auto t1 = std::chrono::steady_clock::now();
    const cudaError_t ue = cudaGraphExecUpdate(donor->exec.get(), graph, &info);
    cold.update_s = seconds_since(t1);
    counters_.update_s += cold.update_s;
    if (ue == cudaSuccess) {
      cold.updated = true;
      ++counters_.updates;
      if (donor != &e) {
        e.exec = std::move(donor->exec);
        donor->instrumented.clear();
        e.graph_memory = donor->graph_memory;  // the executable's, moved with it
        donor->graph_memory = 0;
        ++counters_.evictions;
      }
    } else {
      cudaGetLastError();
      ++counters_.update_refusals;
      if (donor == &e || size() >= options_.capacity) {
        release(*donor);
        if (donor != &e) ++counters_.evictions;
      }
    }
  }
  return cold.updated;
}

void GraphCache::instantiate_copies(Entry& e, ToolCopies& copies, ColdStart& cold) {
  for (auto& [copy, tool] : copies) {
    const auto t3 = std::chrono::steady_clock::now();
    Entry::Copy c;
    c.tool = tool;
    // Node priorities: the stamps at the greatest (stamp_graph.cpp), the captured work as captured.
    SIMPROF_CUDA_CHECK(
        cudaGraphInstantiate(c.exec.out(), copy.get(), cudaGraphInstantiateFlagUseNodePriority));
    c.graph = std::move(copy);  // kept: its tool is told with it when the executable goes
    cold.instrumented_instantiate_s += seconds_since(t3);
    e.instrumented.push_back(std::move(c));
  }
}

}  // namespace simprof::cuda
