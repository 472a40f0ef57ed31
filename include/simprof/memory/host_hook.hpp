// SPDX-License-Identifier: MIT
// The host allocation hook, opt-in: SIMPROF_COUNT_HOST_ALLOCATIONS() at namespace scope in ONE .cpp
// of the program replaces the global operator new/delete with versions that call malloc/free and
// count into simprof::host_allocations() (what MemoryTracker's host columns read). simprof never
// replaces them itself: a program that has its own replacement calls note_alloc()/note_free() from
// it instead.
//
// example: file
/* clang-format off */
//   // main.cpp
//   #include "simprof/memory/host_hook.hpp"
//   SIMPROF_COUNT_HOST_ALLOCATIONS();
//   int main() {
//     simprof::MemoryTracker mem(prof, /*device=*/nullptr, &simprof::host_allocations());
//   }
/* clang-format on */
//
// Put it in a .cpp, not a .cu: nvcc compiles a .cu's operator new for the device too, where it
// cannot throw. Unsized deletes do not know their size: they count a free of 0 bytes (the count
// stays exact).
#pragma once

#include <cstdlib>
#include <new>

#include "simprof/memory/tracker.hpp"

#if defined(__GNUC__) && !defined(__clang__)
// malloc/free behind new/delete is the point; GCC flags the pairs it inlines
#define SIMPROF_DETAIL_HOOK_PRAGMA _Pragma("GCC diagnostic ignored \"-Wmismatched-new-delete\"")
#else
#define SIMPROF_DETAIL_HOOK_PRAGMA
#endif

#define SIMPROF_COUNT_HOST_ALLOCATIONS()                                                  \
  SIMPROF_DETAIL_HOOK_PRAGMA                                                              \
  void* operator new(std::size_t n) {                                                     \
    void* p = std::malloc(n ? n : 1);                                                     \
    if (p == nullptr) throw std::bad_alloc();                                             \
    ::simprof::host_allocations().note_alloc(n);                                          \
    return p;                                                                             \
  }                                                                                       \
  void* operator new[](std::size_t n) { return operator new(n); }                         \
  void* operator new(std::size_t n, const std::nothrow_t&) noexcept {                     \
    void* p = std::malloc(n ? n : 1);                                                     \
    if (p != nullptr) ::simprof::host_allocations().note_alloc(n);                        \
    return p;                                                                             \
  }                                                                                       \
  void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept {                 \
    return operator new(n, t);                                                            \
  }                                                                                       \
  void operator delete(void* p) noexcept {                                                \
    if (p == nullptr) return;                                                             \
    ::simprof::host_allocations().note_free(0);                                           \
    std::free(p);                                                                         \
  }                                                                                       \
  void operator delete[](void* p) noexcept { operator delete(p); }                        \
  void operator delete(void* p, std::size_t n) noexcept {                                 \
    if (p == nullptr) return;                                                             \
    ::simprof::host_allocations().note_free(n);                                           \
    std::free(p);                                                                         \
  }                                                                                       \
  void operator delete[](void* p, std::size_t n) noexcept { operator delete(p, n); }      \
  void operator delete(void* p, const std::nothrow_t&) noexcept { operator delete(p); }   \
  void operator delete[](void* p, const std::nothrow_t&) noexcept { operator delete(p); } \
  static_assert(true, "")
