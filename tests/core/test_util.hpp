// SPDX-License-Identifier: MIT
// Small helpers shared by the core tests.
#pragma once

#include <string>

namespace simprof::testing {

/// The message of the exception of type E that `f` throws, or "" when it throws none.
template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

}  // namespace simprof::testing
