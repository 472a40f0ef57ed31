// SPDX-License-Identifier: MIT
// Kernel names as Kineto writes them: demangled where the name is a mangled C++ one. Private to
// src/cuda.
#pragma once

#include <cxxabi.h>

#include <cstdlib>
#include <string>

namespace simprof::cuda::detail {

/// `raw` demangled when it is a mangled C++ name ("_Z..."), else as it is; "?" for null.
inline std::string demangle(const char* raw) {
  if (raw == nullptr) return "?";
  std::string shown = raw;
  if (shown.rfind("_Z", 0) == 0) {
    int status = 0;
    char* d = abi::__cxa_demangle(raw, nullptr, nullptr, &status);
    if (status == 0 && d) shown = d;
    std::free(d);
  }
  return shown;
}

}  // namespace simprof::cuda::detail
