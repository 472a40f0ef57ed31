// SPDX-License-Identifier: MIT
// Live heap blocks of the whole process, through glibc's malloc family (what operator new's hook
// cannot see: CUPTI and the CUDA driver call malloc directly). Linked into a diagnostic binary
// only: it replaces malloc, calloc, realloc, memalign, aligned_alloc, posix_memalign, valloc,
// pvalloc and free.
#include <malloc.h>

#include <atomic>
#include <cerrno>
#include <cstddef>

extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void* __libc_valloc(std::size_t);
void* __libc_pvalloc(std::size_t);
void __libc_free(void*);
}

namespace {
std::atomic<long long> g_blocks{0}, g_bytes{0};
void* note(void* p) noexcept {
  if (p) {
    g_blocks.fetch_add(1, std::memory_order_relaxed);
    g_bytes.fetch_add(static_cast<long long>(malloc_usable_size(p)), std::memory_order_relaxed);
  }
  return p;
}
}  // namespace

extern "C" {
long long simprof_live_malloc_blocks() noexcept { return g_blocks.load(); }
long long simprof_live_malloc_bytes() noexcept { return g_bytes.load(); }
void* malloc(std::size_t n) noexcept { return note(__libc_malloc(n)); }
void* calloc(std::size_t n, std::size_t m) noexcept { return note(__libc_calloc(n, m)); }
void* memalign(std::size_t a, std::size_t n) noexcept { return note(__libc_memalign(a, n)); }
void* aligned_alloc(std::size_t a, std::size_t n) noexcept { return memalign(a, n); }
void* valloc(std::size_t n) noexcept { return note(__libc_valloc(n)); }
void* pvalloc(std::size_t n) noexcept { return note(__libc_pvalloc(n)); }
int posix_memalign(void** out, std::size_t a, std::size_t n) noexcept {
  if (a < sizeof(void*) || (a & (a - 1)) != 0) return EINVAL;
  void* p = memalign(a, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void* realloc(void* old, std::size_t n) noexcept {
  const long long was = old ? static_cast<long long>(malloc_usable_size(old)) : 0;
  void* p = __libc_realloc(old, n);
  if (p == nullptr) {
    if (old && n == 0) {
      g_blocks.fetch_sub(1);
      g_bytes.fetch_sub(was);
    }
    return nullptr;
  }
  if (old == nullptr) return note(p);
  g_bytes.fetch_add(static_cast<long long>(malloc_usable_size(p)) - was);
  return p;
}
void free(void* p) noexcept {
  if (p) {
    g_blocks.fetch_sub(1, std::memory_order_relaxed);
    g_bytes.fetch_sub(static_cast<long long>(malloc_usable_size(p)), std::memory_order_relaxed);
  }
  __libc_free(p);
}
}
