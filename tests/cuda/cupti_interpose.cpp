// SPDX-License-Identifier: MIT
// Definitions of cuptiActivityEnable and cuptiActivityFlushAll that take the place of libcupti's in
// test_cupti_faults: each forwards to the real call (dlsym RTLD_NEXT) unless armed to fail.
#include "cupti_interpose.hpp"

#include <cupti.h>

#include <atomic>

#include "interpose.hpp"

namespace simprof::cuda::cuptifault {

namespace {

std::atomic<int> g_armed{-1};  // the Call that fails; -1: none
std::atomic<long> g_failed{0};

bool fail(Call c) {
  if (g_armed.load() != c) return false;
  ++g_failed;
  return true;
}

template <class F>
F real(const char* name) {
  return simprof::testing::real_function<F>("test_cupti_faults", name);
}

}  // namespace

void arm(Call call) { g_armed = call; }
void disarm() { g_armed = -1; }
long failed() { return g_failed.load(); }

}  // namespace simprof::cuda::cuptifault

namespace cf = simprof::cuda::cuptifault;

extern "C" CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  static const auto next = cf::real<CUptiResult (*)(CUpti_ActivityKind)>("cuptiActivityEnable");
  return cf::fail(cf::kActivityEnable) ? CUPTI_ERROR_NOT_INITIALIZED : next(kind);
}

extern "C" CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
  static const auto next = cf::real<CUptiResult (*)(uint32_t)>("cuptiActivityFlushAll");
  return cf::fail(cf::kActivityFlushAll) ? CUPTI_ERROR_NOT_INITIALIZED : next(flag);
}
