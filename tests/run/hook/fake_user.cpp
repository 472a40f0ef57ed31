// SPDX-License-Identifier: MIT
// A library linked to libcuda and loaded with dlopen(RTLD_LOCAL), as Python loads an extension:
// its calls to the driver's launch functions by name reach the hook's exports, and through them the
// driver, which is not in the global scope.
#include <cuda.h>

extern "C" __attribute__((visibility("default"))) int fake_user_launch(CUstream s) {
  return cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr);
}
