// SPDX-License-Identifier: MIT
#include "simprof/detail/thread_id.hpp"

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace simprof::detail {

std::int64_t os_thread_id() noexcept {
#if defined(__linux__)
  return static_cast<std::int64_t>(::syscall(SYS_gettid));
#else
  return 1;
#endif
}

}  // namespace simprof::detail
