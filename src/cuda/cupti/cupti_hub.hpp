// SPDX-License-Identifier: MIT
// The process's one CUPTI subscriber (CUPTI allows one), shared by the kernel tracer and the device
// allocation counter: subscribed while any lease is held, its callback forwarding to the one
// allocation handler when one is set. Private to simprof::cuda.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>

namespace simprof::cuda::detail {

/// CUPTI's name for a result ("CUPTI_ERROR_NOT_INITIALIZED").
std::string cupti_error(CUptiResult r);

using CuptiHandler = void (*)(CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data);

/// Holds the shared subscription for its life; `result` is CUPTI's answer (CUPTI_SUCCESS, or why
/// not: another tool holds CUPTI).
class CuptiLease {
 public:
  CuptiLease();
  ~CuptiLease();
  CuptiLease(const CuptiLease&) = delete;
  CuptiLease& operator=(const CuptiLease&) = delete;
  CUptiResult result() const noexcept { return result_; }
  /// Why the lease failed, for the warning: "cuptiSubscribe failed: ... (another profiler ...?)".
  std::string failure() const;
  /// The subscriber (null when result() is not CUPTI_SUCCESS).
  CUpti_SubscriberHandle handle() const noexcept;

 private:
  CUptiResult result_;
};

/// Launch order as CUPTI numbers it. CUPTI gives every runtime and driver call a correlation id
/// from one increasing sequence, and a kernel, copy or memset carries the id of the call that
/// launched it. A correlation mark is the id of a marker call (cudaRuntimeGetVersion, whose
/// callback enable_correlation_marks() turns on for the subscriber) made now on this thread:
/// work launched before it has a smaller id, work launched after it a larger one. 0 when no
/// callback reported (marks not enabled, or CUPTI numbered nothing).
CUptiResult enable_correlation_marks(CUpti_SubscriberHandle subscriber, bool on) noexcept;
std::uint32_t correlation_mark() noexcept;

/// The callback handler (one at a time: the allocation counter's); null to clear. What it reaches
/// must outlive any callback in flight on another thread: static storage.
void set_cupti_handler(CuptiHandler handler) noexcept;

/// The graph-node handler (the kernel tracer's): CUPTI's resource callbacks for graph nodes made,
/// cloned (by cudaGraphClone and by every instantiation) and destroyed, which enable_graph_nodes()
/// turns on for the subscriber. Null to clear; the same lifetime rule as set_cupti_handler().
void set_graph_node_handler(CuptiHandler handler) noexcept;
CUptiResult enable_graph_nodes(CUpti_SubscriberHandle subscriber, bool on) noexcept;

/// Whether a KernelTracer is tracing a window now (started, not yet collected): a GraphKernelTimer
/// in the same window leaves its replays to CUPTI's records.
bool kernel_tracer_window_open() noexcept;

/// While one lives, graph nodes the calling thread makes are simprof's own (DeviceStageTimer's
/// stamps added to a graph's copy): the kernel tracer gives them no stage.
class OwnNodes {
 public:
  OwnNodes() noexcept;
  ~OwnNodes();
  OwnNodes(const OwnNodes&) = delete;
  OwnNodes& operator=(const OwnNodes&) = delete;
  /// Whether the calling thread is inside an OwnNodes.
  static bool active() noexcept;

 private:
  bool was_;
};

}  // namespace simprof::cuda::detail
