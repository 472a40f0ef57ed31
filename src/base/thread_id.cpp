// SPDX-License-Identifier: MIT
#include "simprof/detail/thread_id.hpp"

#if defined(__linux__)
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#endif

namespace simprof::detail {

#if defined(__linux__)
namespace {

// gettid() is a system call: each thread asks once and keeps the answer. A fork()ed
// child's thread has another id than the thread it was copied from, so a fork makes every cache
// stale (the generation below), and the child's thread asks again.
std::atomic<unsigned> g_fork_generation{0};

void after_fork_in_child() noexcept { g_fork_generation.fetch_add(1, std::memory_order_relaxed); }

const bool g_registered = [] {
  return ::pthread_atfork(nullptr, nullptr, &after_fork_in_child) == 0;
}();

struct CachedId {
  unsigned generation = ~0u;
  std::int64_t tid = 0;
};
thread_local CachedId t_id;

}  // namespace

std::int64_t os_thread_id() noexcept {
  const unsigned g = g_fork_generation.load(std::memory_order_relaxed);
  if (!g_registered || t_id.generation != g) {
    t_id.tid = static_cast<std::int64_t>(::syscall(SYS_gettid));
    t_id.generation = g;
  }
  return t_id.tid;
}
#else
std::int64_t os_thread_id() noexcept { return 1; }
#endif

}  // namespace simprof::detail
