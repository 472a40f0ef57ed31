// SPDX-License-Identifier: MIT
// The launch hook, preloaded, in a program not linked to libcuda: before the driver is loaded, a
// probe for a launch function finds none (as without the hook); a library linked to libcuda and
// loaded with dlopen(RTLD_LOCAL) (as Python loads an extension) launches through the hook's
// exports into a driver outside the global scope, and its launches are told.
#include <dlfcn.h>

#include <cstdio>

#include "../../../src/cuda/trace/launch_hook.hpp"

namespace {
int told = 0;
void watcher(void*, void* stream, int) { told += stream == reinterpret_cast<void*>(0x10) ? 1 : 0; }
}  // namespace

int main() {
  namespace d = simprof::cuda::detail;
  const auto watch = reinterpret_cast<d::HookWatch>(dlsym(RTLD_DEFAULT, d::kHookWatch));
  if (watch == nullptr) {
    std::fprintf(stderr, "FAILED: the hook is not in the process (LD_PRELOAD it)\n");
    return 1;
  }
  int failures = 0;
  dlerror();
  if (dlsym(RTLD_DEFAULT, "cuLaunchKernel") != nullptr || dlerror() == nullptr) {
    std::fprintf(stderr, "FAILED: no driver loaded, yet cuLaunchKernel was found (or no error)\n");
    ++failures;
  }
  void* user = dlopen("libfake_user.so", RTLD_NOW | RTLD_LOCAL);
  if (user == nullptr) {
    std::fprintf(stderr, "FAILED: dlopen libfake_user.so: %s\n", dlerror());
    return 1;
  }
  const auto launch = reinterpret_cast<int (*)(void*)>(dlsym(user, "fake_user_launch"));
  const auto calls = static_cast<int*>(dlsym(user, "fake_calls"));  // the driver's, locally
  watch(&watcher, nullptr);
  const int rc = launch != nullptr ? launch(reinterpret_cast<void*>(0x10)) : -1;
  watch(nullptr, nullptr);
  if (rc != 0 || calls == nullptr || calls[0] != 1 || told != 1) {
    std::fprintf(stderr,
                 "FAILED: a launch from a locally loaded library: rc %d, driver calls %d, "
                 "told %d (expected 0, 1, 1)\n",
                 rc, calls ? calls[0] : -1, told);
    ++failures;
  }
  if (failures == 0) std::printf("launch hook, local: every check passed\n");
  return failures == 0 ? 0 : 1;
}
