// SPDX-License-Identifier: MIT
// std::uncaught_exceptions() at the cost of one load, for the step scope's end: with libstdc++ on
// Linux (the Itanium C++ ABI) the count lives in the runtime's per-thread block (__cxa_eh_globals,
// whose first two members the ABI fixes; libstdc++ keeps it in static TLS, valid for the thread's
// whole life); its address is asked once per thread and kept in a thread_local of ours. Other
// runtimes (libc++abi may keep the block behind a pthread key freed at thread exit; Emscripten
// counts in JavaScript) use std::uncaught_exceptions() itself. That call reaches the block through
// the runtime's own thread-local access every time, and right after an engine's step, with its code
// and pages cold, it measured 1-3 us on the loop's thread (bench: bullet --cost).
#pragma once

#include <cstddef>
#include <cstring>
#include <exception>

#include "simprof/base/config.hpp"

#if defined(__linux__) && defined(__GLIBCXX__) && !defined(__EMSCRIPTEN__) && defined(__has_include)
#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#define SIMPROF_ITANIUM_EH_GLOBALS 1
#endif
#endif
#ifndef SIMPROF_ITANIUM_EH_GLOBALS
#define SIMPROF_ITANIUM_EH_GLOBALS 0
#endif

namespace simprof::detail {

#if SIMPROF_ITANIUM_EH_GLOBALS
/// The Itanium C++ ABI's __cxa_eh_globals, as far as the ABI fixes it (section 2.2.2).
struct ItaniumEhGlobals {
  void* caught_exceptions;
  unsigned int uncaught_exceptions;
};
/// The calling thread's runtime block, once asked (constant-initialised: a plain access).
inline thread_local const ItaniumEhGlobals* t_eh_globals = nullptr;

/// std::uncaught_exceptions(), read from the runtime's per-thread block (copied out as bytes: the
/// runtime's own type is opaque here).
SIMPROF_FORCE_INLINE int uncaught_exceptions() noexcept {
  const ItaniumEhGlobals* g = t_eh_globals;
  if (SIMPROF_UNLIKELY(g == nullptr)) {
    g = reinterpret_cast<const ItaniumEhGlobals*>(abi::__cxa_get_globals());
    t_eh_globals = g;
  }
  unsigned int n = 0;
  std::memcpy(&n,
              reinterpret_cast<const char*>(g) + offsetof(ItaniumEhGlobals, uncaught_exceptions),
              sizeof n);
  return static_cast<int>(n);
}
#else
/// std::uncaught_exceptions() (not libstdc++ on Linux).
inline int uncaught_exceptions() noexcept { return std::uncaught_exceptions(); }
#endif

}  // namespace simprof::detail
