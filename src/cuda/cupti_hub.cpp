// SPDX-License-Identifier: MIT
#include "cupti_hub.hpp"

#include <fmt/format.h>

#include <atomic>
#include <mutex>

namespace simprof::cuda::detail {

namespace {

std::mutex g_mutex;  // guards the two below
int g_leases = 0;
CUpti_SubscriberHandle g_handle = nullptr;

std::atomic<CuptiHandler> g_handler{nullptr};

void CUPTIAPI forward(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
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

void set_cupti_handler(CuptiHandler handler) noexcept {
  g_handler.store(handler, std::memory_order_release);
}

}  // namespace simprof::cuda::detail
