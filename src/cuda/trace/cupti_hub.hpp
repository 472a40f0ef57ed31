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

}  // namespace simprof::cuda::detail
