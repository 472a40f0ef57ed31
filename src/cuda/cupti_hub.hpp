// SPDX-License-Identifier: MIT
// The process's one CUPTI subscriber (CUPTI allows one), shared by the kernel tracer and the device
// allocation counter: subscribed while any lease is held, its callback forwarding to the one
// allocation handler when one is set. Private to simprof::cuda.
#pragma once

#include <cupti.h>

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

/// The callback handler (one at a time: the allocation counter's); null to clear. What it reaches
/// must outlive any callback in flight on another thread: static storage.
void set_cupti_handler(CuptiHandler handler) noexcept;

}  // namespace simprof::cuda::detail
