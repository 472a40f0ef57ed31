// SPDX-License-Identifier: MIT
// KernelTracer's state, shared by kernel_tracer.cpp and the CUPTI callbacks that reach it
// (kernel_tracer_callbacks.cpp). Private to src/cuda/trace.
#pragma once

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "../cupti/cupti_hub.hpp"
#include "cupti_records.hpp"
#include "simprof/base/log.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/trace/kernel_tracer.hpp"
#include "simprof/detail/buffer_pool.hpp"

namespace simprof::cuda {

struct KernelTracer::Impl {
  // The process's one tracer for its life; a second tracer is refused.
  class Registration {
   public:
    explicit Registration(Impl* self) : self_(self) {
      if (!detail::CuptiProcess::get().claim_tracer(self))
        throw std::logic_error(
            "simprof: a KernelTracer already exists (CUPTI allows one per process)");
    }
    ~Registration() { detail::CuptiProcess::get().release_tracer(self_); }
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;

   private:
    Impl* self_;
  };

  Impl(const StepProfiler& p, const TimeBase& tb, const KernelTracerOptions& o)
      : options(o),
        time_base(tb),
        pool(o.buffer_bytes, o.max_buffers),
        prof(p),
        loop_thread(std::this_thread::get_id()) {}

  KernelTracerOptions options;
  TimeBase time_base;                // written only while no window is open (bind)
  std::atomic<bool> enabled{false};  // false for good once disable() ran (on either thread)
  std::string reason;                // written before enabled goes false
  // The device's sticky error, seen when a window ended: the window's kernels after the fault were
  // never run, which its trace says (otherData.device_error).
  std::string device_error;
  simprof::detail::BufferPool
      pool;  // lent to CUPTI, returned on its thread (thread-safe on its own)
  // Counted in the process's open windows while a window is open (start() to its collection, or
  // disable()).
  std::atomic<bool> window_counted{false};
  void mark_window(bool open) noexcept {
    if (window_counted.exchange(open) != open) detail::CuptiProcess::get().window(open ? 1 : -1);
  }
  std::mutex mutex;  // guards everything below: CUPTI completes buffers on its own thread
  bool running = false;
  detail::ActivityRecords records;
  std::uint64_t dropped = 0;
  std::int64_t offset = 0;  // added to CUPTI timestamps when its clock is not the session's
  // The window's launches, between its start's correlation mark and its last step's (all = true
  // when CUPTI gave no marks). Written on the loop's thread; read by stop_and_collect(), which the
  // session runs after stop() (on the writer thread it starts after stop()).
  detail::CorrelationWindow window;
  bool stopped = false;   // stop() ran for the window being collected
  bool kinds_on = false;  // CUPTI's kinds enabled by start() and not yet disabled
  bool warned_unmarked = false;
  bool marks = false;                       // the marker call's callback is on
  int device = 0;                           // the current device when the tracer was made
  std::vector<std::uint32_t> devices_seen;  // in the last window collected
  // The stage each graph node was captured in, by CUPTI's node id: a node made while the loop's
  // thread (the one that made the tracer) has a stage open gets that stage; a clone
  // (cudaGraphClone, and every instantiation, whose nodes are the ones a replayed kernel names) its
  // original's. Written in CUPTI's resource callbacks (at capture and instantiation, never at
  // replay); read when a window is collected.
  const StepProfiler& prof;
  const std::thread::id loop_thread;
  std::mutex nodes_mutex;  // guards node_stage
  std::unordered_map<std::uint64_t, std::string> node_stage;
  std::vector<std::uint64_t> destroyed;  // nodes destroyed since the last collection
  bool graph_nodes = false;              // CUPTI's graph-node callbacks are on

  void forget_destroyed() noexcept {  // under nodes_mutex
    for (const std::uint64_t n : destroyed) node_stage.erase(n);
    destroyed.clear();
  }
  // Declared last: destroyed first, so no callback can reach the members above once they go.
  Registration registration{this};
  detail::CuptiLease subscription;  // CUPTI's one subscriber, shared with DeviceAllocations

  std::vector<CUpti_ActivityKind> kinds() const {
    std::vector<CUpti_ActivityKind> k{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
    if (options.runtime_api) k.push_back(CUPTI_ACTIVITY_KIND_RUNTIME);
    if (options.driver_api) k.push_back(CUPTI_ACTIVITY_KIND_DRIVER);
    if (options.memory) {
      k.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
      k.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
    }
    if (options.synchronization) k.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    if (options.overhead) k.push_back(CUPTI_ACTIVITY_KIND_OVERHEAD);
    return k;
  }

  // CUPTI instruments no further launch (the records of those launched before still come).
  void disable_kinds() {
    for (auto k : kinds()) cuptiActivityDisable(k);
    kinds_on = false;
  }

  // The kinds go off only once the device has run what was launched while they were on: CUPTI
  // disabled with kernels still in flight gives those kernels end times hundreds of microseconds
  // late (the window's last graph launch; docs/tracing.md). Runs on the
  // thread that collects; the work launched after the window meanwhile is traced and left out by
  // its correlation (`window`).
  void drain_and_disable() {
    if (!kinds_on) return;
    if (const cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) {
      device_error = fmt::format("cudaDeviceSynchronize failed: {}", cuda::describe(e));
      default_logger()->error("simprof: kernel tracer: {}", device_error);
    }
    disable_kinds();
  }

  // Off for good, said once; a window running stops collecting (its kinds are the caller's to
  // disable: never CUPTI's, when another tool holds it).
  void disable(std::string why) {
    reason = std::move(why);
    enabled = false;
    mark_window(false);
    {
      std::lock_guard<std::mutex> lock(mutex);
      running = false;
    }
    default_logger()->warn("simprof: kernel tracing is off: {}. The simulation runs on untraced.",
                           reason);
  }
};

namespace detail {
// CUPTI's callbacks into the one tracer (kernel_tracer_callbacks.cpp).
uint64_t CUPTIAPI tracer_timestamp() noexcept;
void CUPTIAPI tracer_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
void CUPTIAPI tracer_buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t,
                                      size_t valid);
void tracer_graph_node(void* context, CUpti_CallbackDomain, CUpti_CallbackId id, const void* data);
}  // namespace detail

}  // namespace simprof::cuda
