// SPDX-License-Identifier: MIT
// Private to the kernel tracer: CUPTI activity records kept as compact structs while a window is
// open (parsed on CUPTI's thread, under the tracer's lock), and turned into typed spans when the
// window is collected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "correlation_window.hpp"
#include "simprof/cuda/trace/kernel_tracer.hpp"
#include "simprof/trace/span.hpp"

namespace simprof::cuda::detail {

/// Whether the host call CUPTI names by (api, cbid) blocks until a stream or the device is done:
/// cudaStreamSynchronize, cudaDeviceSynchronize, cudaThreadSynchronize, cuStreamSynchronize,
/// cuCtxSynchronize (and their per-thread forms); an event's synchronisation or a query is not one.
bool waits_for_device(LaunchApi api, std::uint32_t cbid) noexcept;

struct KernelRecord {
  std::uint64_t start, end;
  std::uint32_t device, context, stream, correlation, graph_id;
  std::uint64_t graph_node;
  Dim3 grid, block;
  std::uint32_t registers, shared_memory;
  int name;
};
struct LaunchRecord {
  std::uint64_t start, end;
  std::uint32_t cbid, correlation, tid;
  LaunchApi api;
};
struct CopyRecord {
  std::uint64_t start, end, bytes;
  std::uint32_t device, context, stream, correlation;
  bool memset;
  CopyKind kind;
};
struct SyncRecord {
  std::uint64_t start, end;
  SyncKind kind;
  std::uint32_t context, stream, correlation;
};

class ActivityRecords {
 public:
  /// Appends the records of one completed CUPTI buffer.
  void parse(std::uint8_t* buffer, std::size_t valid);
  void clear() noexcept;
  /// The spans of the work `window` holds: CUPTI timestamps plus `offset_ns`, host spans on process
  /// `pid`; a synchronisation whose context ran no device work in the window goes on
  /// `default_device`. Driver calls are kept where they launched device work (NCCL's
  /// cuLaunchKernelEx), the rest (the driver calls a library makes between launches) are left out
  /// by design.
  /// `node_stages`: the stage each graph node was captured in, by CUPTI's node id (null: none).
  void to_spans(TraceMode mode, const CorrelationWindow& window, std::int64_t offset_ns,
                std::int64_t pid, std::int32_t default_device, std::vector<Span>& out,
                const std::unordered_map<std::uint64_t, std::string>* node_stages = nullptr) const;
  /// Devices that ran the window's work.
  std::vector<std::uint32_t> devices(const CorrelationWindow& window) const;

 private:
  int intern(const char* mangled);

  std::vector<KernelRecord> kernels_;
  std::vector<LaunchRecord> launches_;
  std::vector<CopyRecord> copies_;
  std::vector<SyncRecord> syncs_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> overheads_;
  std::vector<std::string> names_;  // demangled, kept across windows
  std::unordered_map<std::string, int> name_ids_;
};

}  // namespace simprof::cuda::detail
