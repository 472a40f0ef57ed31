// SPDX-License-Identifier: MIT
// The process's CUPTI state, one object (CuptiProcess): CUPTI allows one subscriber per process,
// and its callbacks carry no context of ours. The kernel tracer and the device allocation counter
// share it through the functions below. Private to simprof::cuda.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>

namespace simprof::cuda::detail {

/// CUPTI's name for a result ("CUPTI_ERROR_NOT_INITIALIZED").
std::string cupti_error(CUptiResult r);

using CuptiHandler = void (*)(void* context, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                              const void* data);

/// Everything of CUPTI's that is the process's, not one tool's. Made at first use and never
/// destroyed (CUPTI may call back until the process exits); reached through get().
///   * the subscription: subscribed while any CuptiLease is held;
///   * three handlers with their contexts (the allocation counter's callbacks, the kernel tracer's
///     graph-node callbacks, LaunchScopes's launch callbacks): a handler is replaced only once no
///     callback is inside it (a lock the callbacks share, never a spin), so its context may go
///     right after;
///   * the one KernelTracer (claim_tracer), which CUPTI's buffer and clock callbacks reach, and the
///     one DeviceAllocations (claim_allocations), shared by whoever asks (shared_allocations);
///   * how many kernel tracer windows are open;
///   * what its callbacks keep per thread (this_thread(): a callback runs on the calling thread).
class CuptiProcess {
 public:
  static CuptiProcess& get() noexcept;
  /// CUPTI's state of the calling thread, for the thread's life.
  struct Thread {
    std::uint32_t mark = 0;  ///< the id of the thread's last correlation mark (correlation_mark())
    bool own_nodes = false;  ///< inside an OwnNodes
    int in_runtime = 0;      ///< > 0 inside a runtime allocation call (DeviceAllocations)
  };
  static Thread& this_thread() noexcept;
  CuptiProcess(const CuptiProcess&) = delete;
  CuptiProcess& operator=(const CuptiProcess&) = delete;

  /// The tracer's state, for its life (false: a tracer exists); given back by the same tracer.
  bool claim_tracer(void* tracer) noexcept;
  void release_tracer(void* tracer) noexcept;
  void* tracer() const noexcept { return tracer_.load(std::memory_order_acquire); }
  /// One LaunchScopes at a time (false: one exists).
  bool claim_launches() noexcept { return !launch_scopes_.exchange(true); }
  void release_launches() noexcept { launch_scopes_.store(false); }
  /// One DeviceAllocations at a time (false: one exists).
  bool claim_allocations() noexcept { return !allocations_.exchange(true); }
  void release_allocations() noexcept { allocations_.store(false); }
  /// The DeviceAllocations alive, or make()'s (type-erased: this room does not know the memory
  /// room's types); it goes when its last holder lets go.
  std::shared_ptr<void> shared_allocations(const std::function<std::shared_ptr<void>()>& make);
  /// A kernel tracer's window opened (+1) or was collected (-1).
  void window(int change) noexcept { windows_open_.fetch_add(change); }
  bool window_open() const noexcept { return windows_open_.load() > 0; }

 private:
  friend class CuptiLease;
  friend void set_cupti_handler(CuptiHandler, void*) noexcept;
  friend void set_graph_node_handler(CuptiHandler, void*) noexcept;
  friend void set_launch_handler(CuptiHandler, void*) noexcept;
  struct Handler {
    CuptiHandler fn = nullptr;
    void* context = nullptr;
  };
  CuptiProcess() = default;
  static void CUPTIAPI forward(void* self, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                               const void* data);
  void set(Handler& slot, CuptiHandler fn, void* context) noexcept;

  std::mutex subscription_mutex_;  // guards the two below
  int leases_ = 0;
  CUpti_SubscriberHandle handle_ = nullptr;
  std::shared_mutex handlers_mutex_;  // shared by callbacks inside a handler; held to replace one
  Handler callbacks_, graph_nodes_, launches_;
  std::atomic<void*> tracer_{nullptr};
  std::atomic<bool> allocations_{false}, launch_scopes_{false};
  std::mutex shared_mutex_;  // guards shared_
  std::weak_ptr<void> shared_;
  std::atomic<int> windows_open_{0};
};

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

/// The callback handler (one at a time: the allocation counter's) and its context; null to clear.
/// Returns once no callback is inside the one it replaces.
void set_cupti_handler(CuptiHandler handler, void* context) noexcept;

/// The graph-node handler (the kernel tracer's): CUPTI's resource callbacks for graph nodes made,
/// cloned (by cudaGraphClone and by every instantiation) and destroyed, which enable_graph_nodes()
/// turns on for the subscriber. Null to clear; returns as set_cupti_handler() does.
void set_graph_node_handler(CuptiHandler handler, void* context) noexcept;
CUptiResult enable_graph_nodes(CUpti_SubscriberHandle subscriber, bool on) noexcept;

/// The launch handler (LaunchScopes's): the driver calls that launch a kernel or a graph (a
/// runtime launch reaches one), which enable_launches() turns on for the subscriber. Null to
/// clear; returns as set_cupti_handler() does.
void set_launch_handler(CuptiHandler handler, void* context) noexcept;
CUptiResult enable_launches(CUpti_SubscriberHandle subscriber, bool on) noexcept;
/// The stream a launch call reported to the launch handler went to, from its parameters (a
/// per-thread call's null stream: CU_STREAM_PER_THREAD, that thread's).
CUstream launch_stream(CUpti_CallbackId id, const void* params) noexcept;

/// Whether a KernelTracer is tracing a window now (started, not yet collected): a GraphKernelTimer
/// in the same window leaves its replays to CUPTI's records.
inline bool kernel_tracer_window_open() noexcept { return CuptiProcess::get().window_open(); }

/// While one lives, graph nodes the calling thread makes are simprof's own (the stamping timers'
/// stamps added to a graph's copy, the stage timer's publication): the kernel tracer gives them no
/// stage.
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
