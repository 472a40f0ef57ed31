// SPDX-License-Identifier: MIT
#include "simprof/cuda/memory/device_allocations.hpp"

#include <cupti.h>  // with the calls' parameter structs (generated_cuda*_meta.h)

#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "../cupti/cupti_hub.hpp"
#include "simprof/base/log.hpp"

namespace simprof::cuda {

namespace {

// The counts, the counter's own: its handler is cleared (set_cupti_handler waits for callbacks
// inside it) before they go.
struct State {
  std::atomic<bool> on{false};
  std::atomic<std::uint64_t> allocs{0}, alloc_bytes{0}, frees{0}, free_bytes{0};
  std::atomic<std::int64_t> in_use{0}, peak{0};
  std::mutex mutex;                                       // guards sizes
  std::unordered_map<std::uintptr_t, std::size_t> sizes;  // live allocations made while counting
};

void allocated(State& s, std::uintptr_t ptr, std::size_t bytes) {
  s.allocs.fetch_add(1, std::memory_order_relaxed);
  s.alloc_bytes.fetch_add(bytes, std::memory_order_relaxed);
  const std::int64_t now =
      s.in_use.fetch_add(static_cast<std::int64_t>(bytes), std::memory_order_relaxed) +
      static_cast<std::int64_t>(bytes);
  std::int64_t peak = s.peak.load(std::memory_order_relaxed);
  while (now > peak && !s.peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  try {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.sizes[ptr] = bytes;
  } catch (...) {  // the size is lost: its free will count 0 bytes
  }
}

void freed(State& s, std::uintptr_t ptr) {
  if (ptr == 0) return;  // cudaFree(nullptr) frees nothing
  std::size_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (auto it = s.sizes.find(ptr); it != s.sizes.end()) {
      bytes = it->second;
      s.sizes.erase(it);
    }
  }
  s.frees.fetch_add(1, std::memory_order_relaxed);
  s.free_bytes.fetch_add(bytes, std::memory_order_relaxed);
  s.in_use.fetch_sub(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
}

template <class P>
const P& params(const CUpti_CallbackData* d) {
  return *static_cast<const P*>(d->functionParams);
}

std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

void runtime_call(State& s, CUpti_CallbackId id, const CUpti_CallbackData* d) {
  if (d->callbackSite == CUPTI_API_ENTER) {
    ++detail::CuptiProcess::this_thread().in_runtime;
    return;
  }
  --detail::CuptiProcess::this_thread().in_runtime;
  if (*static_cast<const cudaError_t*>(d->functionReturnValue) != cudaSuccess) return;
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
      const auto& p = params<cudaMalloc_v3020_params>(d);
      return allocated(s, addr(*p.devPtr), p.size);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000: {
      const auto& p = params<cudaMallocManaged_v6000_params>(d);
      return allocated(s, addr(*p.devPtr), p.size);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020: {
      const auto& p = params<cudaMallocPitch_v3020_params>(d);
      return allocated(s, addr(*p.devPtr), *p.pitch * p.height);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020: {
      const auto& p = params<cudaMallocAsync_v11020_params>(d);  // the same layout
      return allocated(s, addr(*p.devPtr), p.size);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020: {
      const auto& p = params<cudaMallocFromPoolAsync_v11020_params>(d);
      return allocated(s, addr(*p.ptr), p.size);
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
      return freed(s, addr(params<cudaFree_v3020_params>(d).devPtr));
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020:
      return freed(s, addr(params<cudaFreeAsync_v11020_params>(d).devPtr));
    default:
      return;
  }
}

void driver_call(State& s, CUpti_CallbackId id, const CUpti_CallbackData* d) {
  // Inside a runtime allocation call the driver calls it makes are its own, not counted again.
  if (detail::CuptiProcess::this_thread().in_runtime > 0 || d->callbackSite != CUPTI_API_EXIT)
    return;
  if (*static_cast<const CUresult*>(d->functionReturnValue) != CUDA_SUCCESS) return;
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      const auto& p = params<cuMemAlloc_v2_params>(d);
      return allocated(s, static_cast<std::uintptr_t>(*p.dptr), p.bytesize);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      const auto& p = params<cuMemAllocManaged_params>(d);
      return allocated(s, static_cast<std::uintptr_t>(*p.dptr), p.bytesize);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      const auto& p = params<cuMemAllocPitch_v2_params>(d);
      return allocated(s, static_cast<std::uintptr_t>(*p.dptr), *p.pPitch * p.Height);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
      const auto& p = params<cuMemAllocAsync_params>(d);
      return allocated(s, static_cast<std::uintptr_t>(*p.dptr), p.bytesize);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      const auto& p = params<cuMemAllocFromPoolAsync_params>(d);
      return allocated(s, static_cast<std::uintptr_t>(*p.dptr), p.bytesize);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      return freed(s, static_cast<std::uintptr_t>(params<cuMemFree_v2_params>(d).dptr));
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      return freed(s, static_cast<std::uintptr_t>(params<cuMemFreeAsync_params>(d).dptr));
    default:
      return;
  }
}

void on_callback(void* context, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                 const void* data) {
  State& s = *static_cast<State*>(context);
  if (!s.on.load(std::memory_order_acquire)) return;
  const auto* d = static_cast<const CUpti_CallbackData*>(data);
  try {
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) runtime_call(s, id, d);
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) driver_call(s, id, d);
  } catch (...) {  // nothing may throw into CUPTI
  }
}

constexpr CUpti_CallbackId kRuntimeIds[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020,
};
constexpr CUpti_CallbackId kDriverIds[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
};

}  // namespace

struct DeviceAllocations::Impl {
  State counts;
  detail::CuptiLease lease;
  std::string reason;
  bool enabled = false;

  void enable(CUpti_CallbackDomain domain, const CUpti_CallbackId* ids, std::size_t n) {
    for (std::size_t i = 0; i < n && enabled; ++i)
      if (const CUptiResult r = cuptiEnableCallback(1, lease.handle(), domain, ids[i]);
          r != CUPTI_SUCCESS) {
        enabled = false;
        reason = fmt::format("cuptiEnableCallback failed: {}", detail::cupti_error(r));
      }
  }
  void disable_all() {
    CUpti_SubscriberHandle h = lease.handle();
    if (h == nullptr) return;
    for (const auto id : kRuntimeIds) cuptiEnableCallback(0, h, CUPTI_CB_DOMAIN_RUNTIME_API, id);
    for (const auto id : kDriverIds) cuptiEnableCallback(0, h, CUPTI_CB_DOMAIN_DRIVER_API, id);
  }
};

DeviceAllocations::DeviceAllocations() {
  detail::CuptiProcess& process = detail::CuptiProcess::get();
  if (!process.claim_allocations())
    throw std::logic_error("simprof: a DeviceAllocations already exists (one per process)");
  try {
    impl_ = std::make_unique<Impl>();
  } catch (...) {
    process.release_allocations();
    throw;
  }
  if (impl_->lease.result() != CUPTI_SUCCESS) {
    impl_->reason = impl_->lease.failure();
  } else {
    impl_->enabled = true;
    detail::set_cupti_handler(on_callback, &impl_->counts);
    impl_->enable(CUPTI_CB_DOMAIN_RUNTIME_API, kRuntimeIds, std::size(kRuntimeIds));
    impl_->enable(CUPTI_CB_DOMAIN_DRIVER_API, kDriverIds, std::size(kDriverIds));
    if (!impl_->enabled) {
      impl_->disable_all();
      detail::set_cupti_handler(nullptr, nullptr);
    }
  }
  if (impl_->enabled) {
    impl_->counts.on.store(true, std::memory_order_release);
  } else {
    default_logger()->warn(
        "simprof: device allocations are not counted: {}. The simulation runs on uncounted.",
        impl_->reason);
  }
}

DeviceAllocations::~DeviceAllocations() {
  impl_->counts.on.store(false, std::memory_order_release);
  if (impl_->enabled) {
    impl_->disable_all();
    detail::set_cupti_handler(nullptr, nullptr);  // returns once no callback is inside it
  }
  impl_.reset();  // the lease: unsubscribes when the tracer holds none
  detail::CuptiProcess::get().release_allocations();
}

bool DeviceAllocations::enabled() const noexcept { return impl_->enabled; }
const std::string& DeviceAllocations::disabled_reason() const noexcept { return impl_->reason; }

AllocCounts DeviceAllocations::counts() const noexcept {
  const State& s = impl_->counts;
  AllocCounts c;
  c.allocs = s.allocs.load(std::memory_order_relaxed);
  c.alloc_bytes = s.alloc_bytes.load(std::memory_order_relaxed);
  c.frees = s.frees.load(std::memory_order_relaxed);
  c.free_bytes = s.free_bytes.load(std::memory_order_relaxed);
  return c;
}

std::int64_t DeviceAllocations::in_use_bytes() const noexcept {
  return impl_->enabled ? impl_->counts.in_use.load(std::memory_order_relaxed) : -1;
}

std::int64_t DeviceAllocations::peak_bytes() const noexcept {
  return impl_->enabled ? impl_->counts.peak.load(std::memory_order_relaxed) : -1;
}

std::shared_ptr<DeviceAllocations> DeviceAllocations::shared() {
  return std::static_pointer_cast<DeviceAllocations>(detail::CuptiProcess::get().shared_allocations(
      [] { return std::static_pointer_cast<void>(std::make_shared<DeviceAllocations>()); }));
}

}  // namespace simprof::cuda
