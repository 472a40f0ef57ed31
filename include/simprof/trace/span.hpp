// SPDX-License-Identifier: MIT
// The typed trace model: what every trace source produces and every reader reads. A Span is one
// interval (an instant for counters) of one kind on one track: the fields every span has (name,
// times, host and device track, correlation), and a payload with the fields of its kind alone
// (a kernel's graph ids and launch shape, a copy's bytes, a CPU stage's id and step, ...). The
// Chrome JSON writer and analyze() read those fields; nothing is flattened into strings and parsed
// back. A leaf: it includes nothing of the profiler's.
//
/* clang-format off */
//   simprof::Trace t;
//   t.spans.push_back(simprof::Span::kernel("axpb", begin_ns, end_ns, /*device=*/0, /*stream=*/7,
//                                           /*correlation=*/42));
//   t.spans.back().get<simprof::KernelPayload>().graph_id = 3;   // the kind's own fields
//   simprof::write_chrome_trace(t, "step.json");   // chrome_json.hpp
/* clang-format on */
//
// Times are nanoseconds of the session's TimeBase (time_base.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "simprof/base/ranks.hpp"
#include "simprof/base/stage_id.hpp"

namespace simprof {

/// What a span is: which track it goes on and which fields it uses.
enum class SpanKind : std::uint8_t {
  kCpuStage,  ///< a profiler stage scope on the loop's thread, or the whole step (kStepStage)
  kLaunch,    ///< a CUDA runtime or driver call on a host thread: launches, copies, syncs
  kKernel,    ///< a kernel on a device stream (graph-launch mode: one launch's kernels merged)
  kMemcpy,    ///< a copy on a device stream
  kMemset,    ///< a memset on a device stream
  kSync,      ///< a synchronisation (stream, event, context), on the device track as Kineto has it
  kOverhead,  ///< time the tracer itself took (CUPTI's own records)
  kFlow,      ///< an arrow from a launch (begin, on the host track) to its device work (end)
  kCounter,   ///< a sampled value at begin_ns (the FPS line)
  kRange,     ///< a program's own range (NVTX) on a host thread that is no stage of a step
};
/// "cpu stage", "launch", "kernel", ...
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
/// "Event Synchronize", "Stream Wait Event", "Stream Synchronize", "Context Synchronize"
/// (Kineto's).
std::string_view to_string(SyncKind kind) noexcept;

/// Which CUDA API a launch went through: the runtime (cudaLaunchKernel, cudaGraphLaunch, ...) or
/// the driver (cuLaunchKernelEx: NCCL launches its kernels this way).
enum class LaunchApi : std::uint8_t { kRuntime, kDriver };

/// A collective's arguments (trace/collective_args.hpp): on the NCCL kernels and the host scope.
struct CollectiveArgs;

/// A grid or block shape.
struct Dim3 {
  ///@{
  /// Extent along x, y and z.
  std::int32_t x = 0, y = 0, z = 0;
  ///@}
  friend bool operator==(const Dim3& a, const Dim3& b) noexcept {
    return a.x == b.x && a.y == b.y && a.z == b.z;
  }
};

/// kCpuStage: which stage of which step.
struct StagePayload {
  StageId stage = kNoStage;  ///< the profiler's id (kStepStage for the step itself)
  std::uint64_t step = 0;    ///< the step's index in the trace session
  /// The clock that measured the span when it is not the profiler's: an engine's time handed over
  /// with StepProfiler::record() ("engine", or the name set_stage_clock() gave). Empty otherwise.
  std::string clock;
  /// A collective scope's own span: its arguments.
  std::shared_ptr<const CollectiveArgs> collective;
};

/// kLaunch: which host call.
struct CallPayload {
  std::uint32_t cbid = 0;               ///< CUPTI's callback id of the call
  LaunchApi api = LaunchApi::kRuntime;  ///< runtime or driver API
  /// The call blocks the host until a stream or the device is done (cudaStreamSynchronize,
  /// cudaDeviceSynchronize, cuStreamSynchronize, cuCtxSynchronize; not an event's): set by the
  /// source from the call's identity.
  bool waits_for_device = false;
};

/// kKernel: what ran.
struct KernelPayload {
  std::uint64_t graph_id = 0;       ///< kernels of a replayed graph; 0: not in a graph
  std::uint64_t graph_node_id = 0;  ///< the kernel's node in that graph
  /// The stage the kernel's graph node was captured in ("physics/integrate"); empty where none is
  /// known (not in a graph, captured outside a stage, or before the tracer existed).
  std::string stage;
  std::uint64_t kernels = 0;  ///< graph-launch mode: kernels merged into this span
  ///@{
  /// The launch's grid and block shape; zero in graph-launch mode.
  Dim3 grid, block;
  ///@}
  std::uint32_t registers = 0;      ///< registers per thread
  std::uint32_t shared_memory = 0;  ///< static + dynamic shared memory, bytes
  /// A communication kernel (NCCL's: named "nccl...", as Holistic Trace Analysis classes
  /// kernels), set where the span is made (Span::kernel()).
  bool communication = false;
  /// Launched inside a collective scope: its arguments.
  std::shared_ptr<const CollectiveArgs> collective;
};

/// kMemcpy and kMemset: how much moved.
struct TransferPayload {
  CopyKind copy = CopyKind::kUnknown;  ///< copies: the direction
  std::uint64_t bytes = 0;             ///< bytes copied or set
};

/// kSync: what was waited for.
struct SyncPayload {
  SyncKind sync = SyncKind::kUnknown;  ///< an event, a stream waiting on one, a stream or a context
};

/// kCounter: the sampled value.
struct CounterPayload {
  double value = 0;  ///< the counter's value at begin_ns
};

/// The fields of a span's kind (kOverhead and kFlow have none: std::monostate).
using SpanPayload = std::variant<std::monostate, StagePayload, CallPayload, KernelPayload,
                                 TransferPayload, SyncPayload, CounterPayload>;

/// One interval of one kind on one track (see the header comment).
struct Span {
  /// Which kind of event, hence which fields below are meaningful.
  SpanKind kind = SpanKind::kCpuStage;
  /// Stage, API call or kernel name.
  std::string name;
  /// Start, nanoseconds in the trace's timebase.
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;  ///< == begin_ns for counters
  /// Host track: process id (CPU stages, launches, overhead, counters; where a flow starts).
  std::int64_t pid = 0;
  /// Host track: thread id.
  std::int64_t tid = 0;
  /// Device track: device index (kernels, copies, memsets, syncs; where a flow ends). -1: none.
  std::int32_t device = -1;
  /// Device track: stream id.
  std::int64_t stream = -1;
  std::uint64_t correlation = 0;  ///< links a launch, its device work and their flow; 0: none
  std::uint32_t context = 0;      ///< device spans: CUDA context id (0: unknown)
  SpanPayload payload;            ///< the fields of `kind`

  /// The payload as `P`, or null when the span is of another kind.
  template <class P>
  const P* as() const noexcept {
    return std::get_if<P>(&payload);
  }
  /// The payload as `P`, or null when the span is of another kind.
  template <class P>
  P* as() noexcept {
    return std::get_if<P>(&payload);
  }
  /// The payload as `P`, or an empty one (every field zero) when the span is of another kind: for
  /// readers that treat a missing field as absent.
  template <class P>
  const P& or_empty() const noexcept {
    static const P kEmpty{};
    const P* p = as<P>();
    return p ? *p : kEmpty;
  }
  /// The payload as `P`; throws std::bad_variant_access when the span is of another kind.
  template <class P>
  const P& get() const {
    return std::get<P>(payload);
  }
  /// The payload as `P`; throws std::bad_variant_access when the span is of another kind.
  template <class P>
  P& get() {
    return std::get<P>(payload);
  }

  /// end_ns - begin_ns: the span's length in nanoseconds (0 for counters).
  std::int64_t duration_ns() const noexcept { return end_ns - begin_ns; }
  /// A CPU stage's id (kNoStage for other kinds).
  StageId stage() const noexcept {
    const auto* p = as<StagePayload>();
    return p ? p->stage : kNoStage;
  }
  /// A CPU stage's step in the trace session (0 for other kinds).
  std::uint64_t step() const noexcept {
    const auto* p = as<StagePayload>();
    return p ? p->step : 0;
  }
  /// The span of a whole step.
  bool is_step() const noexcept { return stage() == kStepStage; }
  /// A communication kernel (KernelPayload::communication).
  bool is_communication() const noexcept {
    const auto* p = as<KernelPayload>();
    return p && p->communication;
  }
  /// The arguments of a collective: of its scope's CPU span, or of a kernel launched inside it
  /// (null for everything else).
  const CollectiveArgs* collective() const noexcept;

  /// A CPU stage (or, with kStepStage, a whole step).
  static Span cpu_stage(std::string name, StageId stage, std::uint64_t step, std::int64_t begin_ns,
                        std::int64_t end_ns, std::int64_t pid, std::int64_t tid);
  /// A host call (a launch, a copy, a synchronisation) with its correlation id.
  static Span launch(std::string name, std::int64_t begin_ns, std::int64_t end_ns, std::int64_t pid,
                     std::int64_t tid, std::uint64_t correlation, CallPayload call = {});
  /// A kernel on (device, stream); a name starting "nccl" marks it as communication.
  static Span kernel(std::string name, std::int64_t begin_ns, std::int64_t end_ns,
                     std::int32_t device, std::int64_t stream, std::uint64_t correlation);
  /// A copy on (device, stream), named as Kineto names it ("Memcpy HtoD").
  static Span memcpy(CopyKind copy, std::uint64_t bytes, std::int64_t begin_ns, std::int64_t end_ns,
                     std::int32_t device, std::int64_t stream, std::uint64_t correlation);
  /// A memset on (device, stream).
  static Span memset(std::uint64_t bytes, std::int64_t begin_ns, std::int64_t end_ns,
                     std::int32_t device, std::int64_t stream, std::uint64_t correlation);
  /// On the device track (pid = device, tid = stream; -1 for a context synchronisation).
  static Span synchronization(SyncKind sync, std::int64_t begin_ns, std::int64_t end_ns,
                              std::int32_t device, std::int64_t stream, std::uint64_t correlation);
  /// Time the tracer itself took, on a host thread.
  static Span overhead(std::string name, std::int64_t begin_ns, std::int64_t end_ns,
                       std::int64_t pid, std::int64_t tid);
  /// From (pid, tid) at `from_ns` to (device, stream) at `to_ns`.
  static Span flow(std::uint64_t correlation, std::int64_t from_ns, std::int64_t pid,
                   std::int64_t tid, std::int64_t to_ns, std::int32_t device, std::int64_t stream);
  /// A sampled value at `ts_ns` on process `pid`'s counter track `name`.
  static Span counter(std::string name, std::int64_t ts_ns, std::int64_t pid, double value);
  /// A program's own range on host thread (pid, tid), outside the steps' stages.
  static Span range(std::string name, std::int64_t begin_ns, std::int64_t end_ns, std::int64_t pid,
                    std::int64_t tid);
};

/// A GPU as Kineto's "deviceProperties" lists it.
struct DeviceProperties {
  /// CUDA device ordinal.
  int id = 0;
  /// The device's name (cudaDeviceProp::name).
  std::string name;
  /// Global memory, bytes.
  std::uint64_t total_global_mem = 0;
  ///@{
  /// Compute capability, major and minor.
  int compute_major = 0, compute_minor = 0;
  ///@}
  ///@{
  /// Thread limits per block and per multiprocessor.
  int max_threads_per_block = 0, max_threads_per_multiprocessor = 0;
  ///@}
  ///@{
  /// Registers per block, threads per warp, multiprocessors.
  int regs_per_block = 0, warp_size = 0, num_sms = 0;
  ///@}
  /// Shared memory per block, bytes.
  std::uint64_t shared_mem_per_block = 0;
};

/// One trace window: spans of every source in one timebase, and the header Kineto's readers
/// (Holistic Trace Analysis, Perfetto, TensorBoard) expect before the events.
struct Trace {
  /// Every source's spans, in no particular order.
  std::vector<Span> spans;
  std::map<std::string, std::string> metadata;  ///< written under "otherData"
  std::uint64_t dropped = 0;                    ///< spans lost by any source (also in otherData)
  /// "distributedInfo": rank, world size; written always (HTA needs a rank in every file).
  RankInfo ranks;
  std::string backend = "none";           ///< distributedInfo.backend: "nccl" where NCCL is used
  std::vector<DeviceProperties> devices;  ///< "deviceProperties" (the CUDA tracer's)
  std::map<std::string, std::int64_t> versions;  ///< "cuda_driver_version", "cupti_version", ...
  /// Added to every span's time when written: spans are nanoseconds of the session's clock, and a
  /// session on the wall clock (its default) sets this so that begin_ns + wall_offset_ns is
  /// wall-clock time, measured at the window's start.
  std::int64_t wall_offset_ns = 0;
  /// "baseTimeNanoseconds", subtracted when written: ts = (ns + wall_offset_ns - base) / 1000.
  std::int64_t base_time_ns = 0;
};

}  // namespace simprof
