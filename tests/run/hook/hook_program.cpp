// SPDX-License-Identifier: MIT
// The launch hook (libsimprof_launch_hook.so, preloaded) on a stand-in libcuda (fake_cuda.cpp): no
// GPU. Launch entry points found every way a program finds them reach the driver's and tell the
// calling thread's watcher: by dlsym on libcuda, through cuGetProcAddress (legacy and per-thread
// forms, cuGetProcAddress itself), and called by name in a program linked to libcuda. Other
// threads, no watcher and a retired one tell nothing; dlsym(RTLD_NEXT) keeps its caller's meaning.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

#include "../../../src/cuda/trace/launch_hook.hpp"

extern "C" int fake_calls[8];
extern "C" int fake_default_per_thread;
extern "C" void* fake_stream;
extern "C" void* fake_next_probe();
extern "C" int fake_next_loaded();

namespace {

struct Seen {
  int n = 0;
  void* stream = nullptr;
  int per_thread = -1;
};

void watcher(void* context, void* stream, int per_thread) {
  auto* s = static_cast<Seen*>(context);
  ++s->n;
  s->stream = stream;
  s->per_thread = per_thread;
}

int failures = 0;
void expect(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  }
}

using GetProc2 = CUresult (*)(const char*, void**, int, cuuint64_t,
                              CUdriverProcAddressQueryResult*);
using LaunchKernel = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, unsigned, CUstream, void**, void**);
using LaunchKernelEx = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
using GraphLaunch = CUresult (*)(CUgraphExec, CUstream);
using LaunchCooperative = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                       unsigned, unsigned, CUstream, void**);

CUstream stream(std::uintptr_t v) { return reinterpret_cast<CUstream>(v); }

CUresult launch(LaunchKernel k, CUstream s) {
  return k(nullptr, 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr);
}

}  // namespace

int main() {
  namespace d = simprof::cuda::detail;
  const auto watch = reinterpret_cast<d::HookWatch>(dlsym(RTLD_DEFAULT, d::kHookWatch));
  const auto retire = reinterpret_cast<d::HookRetire>(dlsym(RTLD_DEFAULT, d::kHookRetire));
  const auto entries = reinterpret_cast<d::HookEntries>(dlsym(RTLD_DEFAULT, d::kHookEntries));
  if (watch == nullptr || retire == nullptr || entries == nullptr) {
    std::fprintf(stderr, "FAILED: the hook is not in the process (LD_PRELOAD it)\n");
    return 1;
  }
  Seen seen;
  watch(&watcher, &seen);

  // Called by name (the program is linked to libcuda): the hook's export, then the driver's.
  expect(cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, stream(0x10), nullptr, nullptr) == 0 &&
             fake_calls[0] == 1 && fake_stream == stream(0x10),
         "cuLaunchKernel by name reaches the driver's");
  expect(seen.n == 1 && seen.stream == stream(0x10) && seen.per_thread == 0,
         "cuLaunchKernel by name tells the watcher");

  // Through cuGetProcAddress, as the runtime finds every entry point.
  void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  const auto get = reinterpret_cast<GetProc2>(dlsym(cuda, "cuGetProcAddress_v2"));
  expect(get != nullptr && reinterpret_cast<void*>(get) != dlsym(RTLD_NEXT, "cuGetProcAddress_v2"),
         "dlsym hands out the hook's cuGetProcAddress");
  void* p = nullptr;
  get("cuLaunchKernel", &p, 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, nullptr);
  void* again = nullptr;
  get("cuLaunchKernel", &again, 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, nullptr);
  expect(p != nullptr && p == again, "an entry point asked for twice is the same hook");
  launch(reinterpret_cast<LaunchKernel>(p), stream(0x20));
  expect(fake_calls[0] == 2 && seen.n == 2 && seen.stream == stream(0x20) && seen.per_thread == 0,
         "cuLaunchKernel through cuGetProcAddress");
  get("cuLaunchKernel", &p, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, nullptr);
  launch(reinterpret_cast<LaunchKernel>(p), nullptr);
  expect(fake_calls[1] == 1 && seen.n == 3 && seen.stream == nullptr && seen.per_thread == 1,
         "the per-thread form says so (a null stream is the thread's own)");
  get("cuLaunchKernelEx", &p, 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, nullptr);
  CUlaunchConfig config{};
  config.hStream = stream(0x30);
  reinterpret_cast<LaunchKernelEx>(p)(&config, nullptr, nullptr, nullptr);
  expect(fake_calls[2] == 1 && seen.n == 4 && seen.stream == stream(0x30),
         "cuLaunchKernelEx: the stream of its config");
  // CU_GET_PROC_ADDRESS_DEFAULT may give the per-thread form: told as one.
  fake_default_per_thread = 1;
  get("cuGraphLaunch", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, nullptr);
  fake_default_per_thread = 0;
  reinterpret_cast<GraphLaunch>(p)(nullptr, nullptr);
  expect(fake_calls[7] == 1 && seen.n == 5 && seen.per_thread == 1,
         "the default flag's per-thread form is told as one");
  get("cuLaunchCooperativeKernel", &p, 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, nullptr);
  reinterpret_cast<LaunchCooperative>(p)(nullptr, 1, 1, 1, 1, 1, 1, 0, stream(0x38), nullptr);
  expect(fake_calls[4] == 1 && seen.n == 6 && seen.stream == stream(0x38),
         "cuLaunchCooperativeKernel through cuGetProcAddress");
  get("cuGetProcAddress", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, nullptr);
  expect(p == reinterpret_cast<void*>(get), "cuGetProcAddress asked of itself is the hook's");

  // By dlsym on libcuda.
  dlerror();
  const auto graph = reinterpret_cast<GraphLaunch>(dlsym(cuda, "cuGraphLaunch_ptsz"));
  expect(dlerror() == nullptr, "a dlsym that found its symbol leaves no error");
  graph(nullptr, stream(0x40));
  expect(fake_calls[7] == 2 && seen.n == 7 && seen.stream == stream(0x40) && seen.per_thread == 1,
         "cuGraphLaunch_ptsz by dlsym");
  expect(dlsym(RTLD_DEFAULT, "cuLaunchKernel") == reinterpret_cast<void*>(&cuLaunchKernel),
         "the hook's own export is handed out as it is");
  expect(entries() == 5, "entry points counted: " + std::to_string(entries()));

  // Another thread's launches, no watcher, a retired watcher: nothing told.
  std::thread([&] {
    launch(reinterpret_cast<LaunchKernel>(dlsym(cuda, "cuLaunchKernel")), stream(0x50));
  }).join();
  expect(fake_calls[0] == 3 && seen.n == 7,
         "another thread's launch tells this thread's watcher nothing");
  watch(nullptr, nullptr);
  graph(nullptr, stream(0x60));
  expect(fake_calls[7] == 3 && seen.n == 7, "no watcher: nothing told");
  watch(&watcher, &seen);
  retire();
  graph(nullptr, stream(0x70));
  expect(fake_calls[7] == 4 && seen.n == 7, "a retired watcher is never called");

  // dlsym(RTLD_NEXT) from a library finds the library after it, as without the hook.
  const auto probe = reinterpret_cast<int (*)()>(fake_next_probe());
  expect(fake_next_loaded() == 1 && probe != nullptr && probe() == 2,
         "dlsym(RTLD_NEXT) keeps its caller's meaning");

  dlclose(cuda);
  if (failures == 0) std::printf("launch hook: every check passed\n");
  return failures == 0 ? 0 : 1;
}
