// SPDX-License-Identifier: MIT
#include "cupti_hub.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <atomic>
#include <mutex>

namespace simprof::cuda::detail {

namespace {

std::mutex g_mutex;  // guards the two below
int g_leases = 0;
CUpti_SubscriberHandle g_handle = nullptr;

std::atomic<CuptiHandler> g_handler{nullptr};
std::atomic<CuptiHandler> g_graph_handler{nullptr};

constexpr CUpti_CallbackId kGraphNodeCalls[] = {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
                                                CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
                                                CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING};

constexpr CUpti_CallbackId kMarkCall = CUPTI_RUNTIME_TRACE_CBID_cudaRuntimeGetVersion_v3020;
thread_local std::uint32_t t_mark = 0;  // the id of this thread's last marker call
thread_local bool t_own_nodes = false;  // inside an OwnNodes

void CUPTIAPI forward(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && id == kMarkCall) {
    const auto* d = static_cast<const CUpti_CallbackData*>(data);
    if (d->callbackSite == CUPTI_API_ENTER) t_mark = d->correlationId;
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    for (const CUpti_CallbackId g : kGraphNodeCalls)
      if (id == g) {
        if (const CuptiHandler h = g_graph_handler.load(std::memory_order_acquire))
          h(domain, id, data);
        return;
      }
  }
  if (const CuptiHandler h = g_handler.load(std::memory_order_acquire)) h(domain, id, data);
}

}  // namespace

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
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_leases == 0) {
    result_ = cuptiSubscribe(&g_handle, forward, nullptr);
    if (result_ != CUPTI_SUCCESS) {
      g_handle = nullptr;
      return;
    }
  } else {
    result_ = CUPTI_SUCCESS;
  }
  ++g_leases;
}

CuptiLease::~CuptiLease() {
  if (result_ != CUPTI_SUCCESS) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (--g_leases == 0 && g_handle) {
    cuptiUnsubscribe(g_handle);
    g_handle = nullptr;
  }
}

CUpti_SubscriberHandle CuptiLease::handle() const noexcept {
  if (result_ != CUPTI_SUCCESS) return nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_handle;
}

CUptiResult enable_correlation_marks(CUpti_SubscriberHandle subscriber, bool on) noexcept {
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  return cuptiEnableCallback(on ? 1 : 0, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, kMarkCall);
}

std::uint32_t correlation_mark() noexcept {
  t_mark = 0;
  int version = 0;
  cudaRuntimeGetVersion(&version);  // its callback sets t_mark on this thread
  return t_mark;
}

void set_cupti_handler(CuptiHandler handler) noexcept {
  g_handler.store(handler, std::memory_order_release);
}

OwnNodes::OwnNodes() noexcept : was_(t_own_nodes) { t_own_nodes = true; }
OwnNodes::~OwnNodes() { t_own_nodes = was_; }
bool OwnNodes::active() noexcept { return t_own_nodes; }

void set_graph_node_handler(CuptiHandler handler) noexcept {
  g_graph_handler.store(handler, std::memory_order_release);
}

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
