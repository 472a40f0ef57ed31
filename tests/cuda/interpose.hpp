// SPDX-License-Identifier: MIT
// For the test binaries that interpose a library's calls (cuda_interpose.cpp, cupti_interpose.cpp):
// the real function, found after ours (dlsym RTLD_NEXT); a missing one aborts, naming it.
#pragma once

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace simprof::testing {

template <class F>
F real_function(const char* binary, const char* name) {
  void* p = dlsym(RTLD_NEXT, name);
  if (p == nullptr) {
    std::fprintf(stderr, "%s: no real %s to forward to\n", binary, name);
    std::abort();
  }
  return reinterpret_cast<F>(p);
}

}  // namespace simprof::testing
