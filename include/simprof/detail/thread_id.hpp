// SPDX-License-Identifier: MIT
// The operating system's id of the calling thread, as traces name host threads (Kineto's tid).
#pragma once

#include <cstdint>

namespace simprof::detail {

/// gettid() on Linux (asked once per thread, and again after a fork()); 1 elsewhere.
std::int64_t os_thread_id() noexcept;

}  // namespace simprof::detail
