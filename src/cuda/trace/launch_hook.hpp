// SPDX-License-Identifier: MIT
// What libsimprof_launch_hook.so (launch_hook.cpp) exports to LaunchScopes, which finds it in the
// process by name (dlsym): no link between the two. `simprof run` preloads it by default.
// Private to simprof::cuda.
#pragma once

#include <cstdint>

extern "C" {
/// Called on a watching thread just before each kernel or graph launch it makes through the
/// driver: the stream as the launch named it, and whether the launch was a per-thread-default-
/// stream form (where a null stream is the thread's own).
typedef void (*simprof_launch_watcher)(void* context, void* stream, int per_thread);

// Inside the hook library only (launch_hook.cpp, launch_hook_dlsym.cpp).
typedef void* (*simprof_dlsym)(void* handle, const char* name);
/// The C library's dlsym, once found (null before).
extern __attribute__((visibility("hidden"))) simprof_dlsym simprof_hook_real_dlsym;
/// Finds it (the program ends, saying so, when there is none).
__attribute__((visibility("hidden"))) simprof_dlsym simprof_hook_find_real_dlsym() noexcept;
/// dlsym for every handle but RTLD_NEXT: the C library's answer, or the hook standing for it.
__attribute__((visibility("hidden"))) void* simprof_hook_dlsym(void* handle, const char* name);
}

namespace simprof::cuda::detail {

/// void simprof_launch_hook_watch(simprof_launch_watcher, void* context): the calling thread's
/// watcher from now on (null: none).
inline constexpr const char* kHookWatch = "simprof_launch_hook_watch";
/// void simprof_launch_hook_retire(void): every watcher set so far is never called again; returns
/// once no call is inside one.
inline constexpr const char* kHookRetire = "simprof_launch_hook_retire";
/// std::uint64_t simprof_launch_hook_entries(void): how many driver launch entry points the
/// program was handed through the hook (0: it resolved none through it).
inline constexpr const char* kHookEntries = "simprof_launch_hook_entries";

using HookWatch = void (*)(simprof_launch_watcher, void*);
using HookRetire = void (*)();
using HookEntries = std::uint64_t (*)();

}  // namespace simprof::cuda::detail
