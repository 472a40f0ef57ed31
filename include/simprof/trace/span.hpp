// SPDX-License-Identifier: MIT
// The typed trace model: what every trace source produces and every reader reads. A Span is one
// interval (an instant for counters) of one kind on one track, carrying the fields its kind has:
// device, stream, correlation, graph and node ids, bytes, grid, block. The Chrome JSON writer and
// analyze() read those fields; nothing is flattened into strings and parsed back.
//
/* clang-format off */
//   simprof::Trace t;
//   t.spans.push_back(simprof::Span::kernel("axpb", begin_ns, end_ns, /*device=*/0, /*stream=*/7,
//                                           /*correlation=*/42));
//   simprof::write_chrome_trace(t, "step.json");   // chrome_json.hpp
/* clang-format on */
//
// Times are nanoseconds of the session's TimeBase (time_base.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "simprof/profiler/timings.hpp"

namespace simprof {

enum class SpanKind : std::uint8_t {
  kCpuStage,  ///< a profiler stage scope on the loop's thread, or the whole step (kStepStage)
  kLaunch,    ///< a CUDA runtime call on a host thread: kernel and graph launches, copies, syncs
  kKernel,    ///< a kernel on a device stream (graph-launch mode: one launch's kernels merged)
  kMemcpy,    ///< a copy on a device stream
  kMemset,    ///< a memset on a device stream
  kSync,      ///< a host thread waiting for the device (stream, event or context synchronisation)
  kOverhead,  ///< time the tracer itself took (CUPTI's own records)
  kFlow,      ///< an arrow from a launch (begin, on the host track) to its device work (end)
  kCounter,   ///< a sampled value at begin_ns (the FPS line)
};
std::string_view to_string(SpanKind kind) noexcept;

/// Direction of a copy (CUPTI's copy kinds: H host, D device, A array, P peer).
enum class CopyKind : std::uint8_t {
  kUnknown,
  kHtoD,
  kDtoH,
  kHtoA,
  kAtoH,
  kAtoA,
  kAtoD,
  kDtoA,
  kDtoD,
  kHtoH,
  kPtoP
};
/// "Memcpy HtoD", ... as Kineto names copies.
std::string_view to_string(CopyKind kind) noexcept;

/// What a host synchronisation waited for (CUPTI's synchronisation types).
enum class SyncKind : std::uint8_t { kUnknown, kEvent, kStreamWaitEvent, kStream, kContext };

struct Dim3 {
  std::int32_t x = 0, y = 0, z = 0;
  friend bool operator==(const Dim3& a, const Dim3& b) noexcept {
    return a.x == b.x && a.y == b.y && a.z == b.z;
  }
};

struct Span {
  SpanKind kind = SpanKind::kCpuStage;
  std::string name;
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;  ///< == begin_ns for counters
  // The host track (CPU stages, launches, syncs, overhead, counters; where a flow starts).
  std::int64_t pid = 0;
  std::int64_t tid = 0;
  // The device track (kernels, copies, memsets; where a flow ends). -1: none.
  std::int32_t device = -1;
  std::int64_t stream = -1;
  std::uint64_t correlation = 0;    ///< links a launch, its device work and their flow; 0: none
  std::uint64_t graph_id = 0;       ///< kernels of a replayed graph; 0: not in a graph
  std::uint64_t graph_node_id = 0;  ///< the kernel's node in that graph
  std::uint64_t kernels = 0;        ///< graph-launch mode: kernels merged into this span
  std::uint64_t bytes = 0;          ///< copies and memsets
  CopyKind copy = CopyKind::kUnknown;
  SyncKind sync = SyncKind::kUnknown;
  Dim3 grid, block;          ///< kernels (zero in graph-launch mode)
  std::uint32_t cbid = 0;    ///< launches: CUPTI's callback id of the call
  StageId stage = kNoStage;  ///< CPU stages: the profiler's id (kStepStage for the step)
  std::uint64_t step = 0;    ///< CPU stages: the step's index in the trace session
  double value = 0;          ///< counters

  std::int64_t duration_ns() const noexcept { return end_ns - begin_ns; }
  bool is_step() const noexcept { return kind == SpanKind::kCpuStage && stage == kStepStage; }

  static Span cpu_stage(std::string name, StageId stage, std::uint64_t step, std::int64_t begin_ns,
                        std::int64_t end_ns, std::int64_t pid, std::int64_t tid);
  static Span launch(std::string name, std::int64_t begin_ns, std::int64_t end_ns, std::int64_t pid,
                     std::int64_t tid, std::uint64_t correlation);
  static Span kernel(std::string name, std::int64_t begin_ns, std::int64_t end_ns,
                     std::int32_t device, std::int64_t stream, std::uint64_t correlation);
  static Span memcpy(CopyKind copy, std::uint64_t bytes, std::int64_t begin_ns, std::int64_t end_ns,
                     std::int32_t device, std::int64_t stream, std::uint64_t correlation);
  static Span memset(std::uint64_t bytes, std::int64_t begin_ns, std::int64_t end_ns,
                     std::int32_t device, std::int64_t stream, std::uint64_t correlation);
  static Span synchronization(SyncKind sync, std::int64_t begin_ns, std::int64_t end_ns,
                              std::int64_t pid, std::int64_t tid, std::int64_t stream);
  static Span overhead(std::string name, std::int64_t begin_ns, std::int64_t end_ns,
                       std::int64_t pid, std::int64_t tid);
  /// From (pid, tid) at `from_ns` to (device, stream) at `to_ns`.
  static Span flow(std::uint64_t correlation, std::int64_t from_ns, std::int64_t pid,
                   std::int64_t tid, std::int64_t to_ns, std::int32_t device, std::int64_t stream);
  static Span counter(std::string name, std::int64_t ts_ns, std::int64_t pid, double value);
};

/// One trace window: spans of every source in one timebase.
struct Trace {
  std::vector<Span> spans;
  std::map<std::string, std::string> metadata;  ///< written under "otherData"
  std::uint64_t dropped = 0;                    ///< spans lost by any source (also in otherData)
};

}  // namespace simprof
