// SPDX-License-Identifier: MIT
#include "cupti_hub.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

namespace simprof::cuda::detail {

namespace {

constexpr CUpti_CallbackId kGraphNodeCalls[] = {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
                                                CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
                                                CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING};

constexpr CUpti_CallbackId kMarkCall = CUPTI_RUNTIME_TRACE_CBID_cudaRuntimeGetVersion_v3020;

// The driver calls that launch a kernel or a graph (the per-thread-stream forms too).
constexpr CUpti_CallbackId kDriverLaunches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz};

template <std::size_t N>
bool one_of(CUpti_CallbackId id, const CUpti_CallbackId (&ids)[N]) {
  for (const CUpti_CallbackId c : ids)
    if (id == c) return true;
  return false;
}

bool launch_call(CUpti_CallbackDomain domain, CUpti_CallbackId id) {
  return domain == CUPTI_CB_DOMAIN_DRIVER_API && one_of(id, kDriverLaunches);
}

bool graph_node_call(CUpti_CallbackId id) { return one_of(id, kGraphNodeCalls); }

}  // namespace

CuptiProcess& CuptiProcess::get() noexcept {
  static CuptiProcess* const process = new CuptiProcess();  // never destroyed: see the header
  return *process;
}

CuptiProcess::Thread& CuptiProcess::this_thread() noexcept {
  thread_local Thread self;
  return self;
}

std::shared_ptr<void> CuptiProcess::shared_allocations(
    const std::function<std::shared_ptr<void>()>& make) {
  const std::lock_guard<std::mutex> lock(shared_mutex_);
  std::shared_ptr<void> alive = shared_.lock();
  if (!alive) {
    alive = make();
    shared_ = alive;
  }
  return alive;
}

bool CuptiProcess::claim_tracer(void* tracer) noexcept {
  void* expected = nullptr;
  return tracer_.compare_exchange_strong(expected, tracer);
}

void CuptiProcess::release_tracer(void* tracer) noexcept {
  tracer_.compare_exchange_strong(tracer, nullptr);
}

void CUPTIAPI CuptiProcess::forward(void* self, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                    const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && id == kMarkCall) {
    const auto* d = static_cast<const CUpti_CallbackData*>(data);
    if (d->callbackSite == CUPTI_API_ENTER) CuptiProcess::this_thread().mark = d->correlationId;
    return;
  }
  auto& p = *static_cast<CuptiProcess*>(self);
  const std::shared_lock<std::shared_mutex> inside(p.handlers_mutex_);
  const Handler& h = domain == CUPTI_CB_DOMAIN_RESOURCE && graph_node_call(id) ? p.graph_nodes_
                     : launch_call(domain, id)                                 ? p.launches_
                                                                               : p.callbacks_;
  if (h.fn) h.fn(h.context, domain, id, data);
}

void CuptiProcess::set(Handler& slot, CuptiHandler fn, void* context) noexcept {
  const std::unique_lock<std::shared_mutex> replace(handlers_mutex_);  // none inside after this
  slot = Handler{fn, context};
}

std::string cupti_error(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : fmt::format("CUPTI error {}", static_cast<int>(r));
}

std::string CuptiLease::failure() const {
  return fmt::format("cuptiSubscribe failed: {} (another profiler or tool holds CUPTI?)",
                     cupti_error(result_));
}

CuptiLease::CuptiLease() {
  CuptiProcess& p = CuptiProcess::get();
  std::lock_guard<std::mutex> lock(p.subscription_mutex_);
  if (p.leases_ == 0) {
    result_ = cuptiSubscribe(&p.handle_, &CuptiProcess::forward, &p);
    if (result_ != CUPTI_SUCCESS) {
      p.handle_ = nullptr;
      return;
    }
  } else {
    result_ = CUPTI_SUCCESS;
  }
  ++p.leases_;
}

CuptiLease::~CuptiLease() {
  if (result_ != CUPTI_SUCCESS) return;
  CuptiProcess& p = CuptiProcess::get();
  std::lock_guard<std::mutex> lock(p.subscription_mutex_);
  if (--p.leases_ == 0 && p.handle_) {
    cuptiUnsubscribe(p.handle_);
    p.handle_ = nullptr;
  }
}

CUpti_SubscriberHandle CuptiLease::handle() const noexcept {
  if (result_ != CUPTI_SUCCESS) return nullptr;
  CuptiProcess& p = CuptiProcess::get();
  std::lock_guard<std::mutex> lock(p.subscription_mutex_);
  return p.handle_;
}

CUptiResult enable_correlation_marks(CUpti_SubscriberHandle subscriber, bool on) noexcept {
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  return cuptiEnableCallback(on ? 1 : 0, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, kMarkCall);
}

std::uint32_t correlation_mark() noexcept {
  CuptiProcess::Thread& self = CuptiProcess::this_thread();
  self.mark = 0;
  int version = 0;
  cudaRuntimeGetVersion(&version);  // its callback sets this thread's mark
  return self.mark;
}

void set_cupti_handler(CuptiHandler handler, void* context) noexcept {
  CuptiProcess& p = CuptiProcess::get();
  p.set(p.callbacks_, handler, context);
}

void set_graph_node_handler(CuptiHandler handler, void* context) noexcept {
  CuptiProcess& p = CuptiProcess::get();
  p.set(p.graph_nodes_, handler, context);
}

void set_launch_handler(CuptiHandler handler, void* context) noexcept {
  CuptiProcess& p = CuptiProcess::get();
  p.set(p.launches_, handler, context);
}

CUptiResult enable_launches(CUpti_SubscriberHandle subscriber, bool on) noexcept {
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  const auto enable = [&](CUpti_CallbackDomain domain, CUpti_CallbackId id) {
    return cuptiEnableCallback(on ? 1 : 0, subscriber, domain, id);
  };
  // The driver's calls only: a runtime launch reaches its driver call, which CUPTI reports too.
  for (const CUpti_CallbackId id : kDriverLaunches)
    if (const CUptiResult r = enable(CUPTI_CB_DOMAIN_DRIVER_API, id); r != CUPTI_SUCCESS) {
      if (on) enable_launches(subscriber, false);  // none left on after a failure
      return r;
    }
  return CUPTI_SUCCESS;
}

CUstream launch_stream(CUpti_CallbackId id, const void* params) noexcept {
  CUstream s = nullptr;
  bool per_thread = false;
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      per_thread = true;
      [[fallthrough]];
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
      s = static_cast<const cuLaunchKernel_params*>(params)->hStream;
      break;
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
      per_thread = true;
      [[fallthrough]];
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx: {
      const auto* c = static_cast<const cuLaunchKernelEx_params*>(params)->config;
      s = c != nullptr ? c->hStream : nullptr;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      per_thread = true;
      [[fallthrough]];
    default:  // cuGraphLaunch
      s = static_cast<const cuGraphLaunch_params*>(params)->hStream;
  }
  return s == nullptr && per_thread ? CU_STREAM_PER_THREAD : s;
}

OwnNodes::OwnNodes() noexcept : was_(CuptiProcess::this_thread().own_nodes) {
  CuptiProcess::this_thread().own_nodes = true;
}
OwnNodes::~OwnNodes() { CuptiProcess::this_thread().own_nodes = was_; }
bool OwnNodes::active() noexcept { return CuptiProcess::this_thread().own_nodes; }

CUptiResult enable_graph_nodes(CUpti_SubscriberHandle subscriber, bool on) noexcept {
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  for (const CUpti_CallbackId g : kGraphNodeCalls)
    if (const CUptiResult r =
            cuptiEnableCallback(on ? 1 : 0, subscriber, CUPTI_CB_DOMAIN_RESOURCE, g);
        r != CUPTI_SUCCESS)
      return r;
  return CUPTI_SUCCESS;
}

}  // namespace simprof::cuda::detail
