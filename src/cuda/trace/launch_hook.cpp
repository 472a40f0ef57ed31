// SPDX-License-Identifier: MIT
// libsimprof_launch_hook.so: the driver's kernel and graph launches seen without CUPTI, for
// LaunchScopes (launch_hook.hpp). `simprof run` preloads it (LD_PRELOAD) by default.
//
// Programs find the driver's functions through dlsym() on libcuda and the cuGetProcAddress it
// hands out: this library stands in for dlsym (x86-64), hands out its own cuGetProcAddress, and
// gives each launch entry point (cuLaunchKernel, -Ex, cuLaunchCooperativeKernel, cuGraphLaunch,
// and their per-thread-stream forms) as a hook that tells the calling thread's watcher, if any,
// then calls the driver's. A library linked to libcuda calls the exported launch functions below.
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "launch_hook.hpp"

#define SIMPROF_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t);
using GetProc2 = CUresult (*)(const char*, void**, int, cuuint64_t,
                              CUdriverProcAddressQueryResult*);
using LaunchKernel = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, unsigned, CUstream, void**, void**);
using LaunchKernelEx = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
using LaunchCooperative = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                       unsigned, unsigned, CUstream, void**);
using GraphLaunch = CUresult (*)(CUgraphExec, CUstream);

// ---- the watchers ----------------------------------------------------------------------------

struct Watch {
  simprof_launch_watcher fn = nullptr;
  void* context = nullptr;
  std::uint64_t generation = 0;
};
__attribute__((tls_model("initial-exec"))) thread_local Watch t_watch;
__attribute__((tls_model("initial-exec"))) thread_local bool t_inside = false;
std::atomic<std::uint64_t> g_generation{1};
pthread_rwlock_t g_calls = PTHREAD_RWLOCK_INITIALIZER;  // held shared by a call to a watcher

inline void notify(CUstream stream, bool per_thread) noexcept {
  const Watch& w = t_watch;
  if (__builtin_expect(w.fn == nullptr, 1) || t_inside) return;
  t_inside = true;  // a launch the watcher makes is not told again
  pthread_rwlock_rdlock(&g_calls);
  if (w.generation == g_generation.load(std::memory_order_relaxed))
    w.fn(w.context, stream, per_thread ? 1 : 0);
  pthread_rwlock_unlock(&g_calls);
  t_inside = false;
}

// ---- the hooks: a few slots per entry point, each the driver function it stands for ----------

enum Family { kKernel, kKernelEx, kCooperative, kGraph, kFamilies };
constexpr int kSlots = 4;  // distinct driver functions per family and stream kind
std::atomic<void*> g_real[kFamilies][2][kSlots];
std::atomic<std::uint64_t> g_entries{0};

template <class Fn>
Fn real(Family f, bool per_thread, int slot) {
  return reinterpret_cast<Fn>(g_real[f][per_thread][slot].load(std::memory_order_relaxed));
}

template <bool P, int N>
CUresult kernel_hook(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                     unsigned bz, unsigned shared, CUstream s, void** params, void** extra) {
  notify(s, P);
  return real<LaunchKernel>(kKernel, P, N)(f, gx, gy, gz, bx, by, bz, shared, s, params, extra);
}

template <bool P, int N>
CUresult kernel_ex_hook(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  notify(config != nullptr ? config->hStream : nullptr, P);
  return real<LaunchKernelEx>(kKernelEx, P, N)(config, f, params, extra);
}

template <bool P, int N>
CUresult cooperative_hook(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned shared, CUstream s, void** params) {
  notify(s, P);
  return real<LaunchCooperative>(kCooperative, P, N)(f, gx, gy, gz, bx, by, bz, shared, s, params);
}

template <bool P, int N>
CUresult graph_hook(CUgraphExec g, CUstream s) {
  notify(s, P);
  return real<GraphLaunch>(kGraph, P, N)(g, s);
}

#define SIMPROF_SLOTS(hook, P)                                                     \
  {                                                                                \
    reinterpret_cast<void*>(&hook<P, 0>), reinterpret_cast<void*>(&hook<P, 1>),    \
        reinterpret_cast<void*>(&hook<P, 2>), reinterpret_cast<void*>(&hook<P, 3>) \
  }
void* const kHooks[kFamilies][2][kSlots] = {
    {SIMPROF_SLOTS(kernel_hook, false), SIMPROF_SLOTS(kernel_hook, true)},
    {SIMPROF_SLOTS(kernel_ex_hook, false), SIMPROF_SLOTS(kernel_ex_hook, true)},
    {SIMPROF_SLOTS(cooperative_hook, false), SIMPROF_SLOTS(cooperative_hook, true)},
    {SIMPROF_SLOTS(graph_hook, false), SIMPROF_SLOTS(graph_hook, true)}};
#undef SIMPROF_SLOTS

struct Entry {
  const char* name;
  Family family;
  bool per_thread;
};
// clang-format off
constexpr Entry kEntries[] = {
    {"cuLaunchKernel", kKernel, false}, {"cuLaunchKernel_ptsz", kKernel, true},
    {"cuLaunchKernelEx", kKernelEx, false}, {"cuLaunchKernelEx_ptsz", kKernelEx, true},
    {"cuLaunchCooperativeKernel", kCooperative, false},
    {"cuLaunchCooperativeKernel_ptsz", kCooperative, true},
    {"cuGraphLaunch", kGraph, false}, {"cuGraphLaunch_ptsz", kGraph, true}};
// clang-format on

const Entry* entry(const char* name) noexcept {
  for (const Entry& e : kEntries)
    if (std::strcmp(name, e.name) == 0) return &e;
  return nullptr;
}

// The hook standing for driver function `fn` (its slot, taken at its first sight); `fn` itself
// when the family's slots are all taken.
void* hook_for(Family f, bool per_thread, void* fn) noexcept {
  for (int i = 0; i < kSlots; ++i) {
    void* seen = nullptr;
    if (g_real[f][per_thread][i].compare_exchange_strong(seen, fn)) {
      g_entries.fetch_add(1, std::memory_order_relaxed);
      return kHooks[f][per_thread][i];
    }
    if (seen == fn) return kHooks[f][per_thread][i];
  }
  return fn;
}

// ---- dlsym and cuGetProcAddress -----------------------------------------------------------------

std::atomic<void*> g_get_proc{nullptr}, g_get_proc2{nullptr};  // the driver's
CUresult get_proc_hook(const char*, void**, int, cuuint64_t);
CUresult get_proc2_hook(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

// A function of this library (a hook, or an exported launch function): handed out as it is.
bool is_hook(void* p) noexcept {
  Dl_info found{}, self{};
  return dladdr(p, &found) != 0 && dladdr(reinterpret_cast<void*>(&is_hook), &self) != 0 &&
         found.dli_fbase == self.dli_fbase;
}

simprof_dlsym real_dlsym() noexcept {
  const simprof_dlsym d = simprof_hook_real_dlsym;
  return d != nullptr ? d : simprof_hook_find_real_dlsym();
}

// The driver, libcuda.so.1, while it is loaded (never loads it): a handle to dlclose, or null. A
// failure leaves nothing for the caller's dlerror() (its own dlsym succeeded).
void* driver() noexcept {
  void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (cuda == nullptr) dlerror();
  return cuda;
}

// The symbol `name` of the driver handle `cuda` (null, with dlerror() cleared, when it has none).
void* symbol_in(void* cuda, const char* name) noexcept {
  void* p = real_dlsym()(cuda, name);
  if (p == nullptr) dlerror();
  return p;
}

// The driver's own `name` (null when libcuda is not loaded or has none).
void* driver_symbol(const char* name) noexcept {
  void* cuda = driver();
  if (cuda == nullptr) return nullptr;
  void* p = symbol_in(cuda, name);
  dlclose(cuda);
  return p;
}

// What the program is handed for driver function `fn` of the loaded driver `cuda`: a launch
// entry point's hook, or the hooked cuGetProcAddress; `fn` itself for another library's cu*
// function (`e` null: one of the cuGetProcAddress names).
void* handed_from(void* cuda, const char* symbol, const Entry* e, void* fn,
                  bool per_thread_asked) noexcept {
  Dl_info info{};
  void* map = nullptr;
  if (dladdr1(fn, &info, &map, RTLD_DL_LINKMAP) == 0 || map != cuda) return fn;
  if (e == nullptr) {
    if (fn == symbol_in(cuda, "cuGetProcAddress_v2")) {
      g_get_proc2.store(fn);
      return reinterpret_cast<void*>(&get_proc2_hook);
    }
    if (fn == symbol_in(cuda, "cuGetProcAddress")) {
      g_get_proc.store(fn);
      return reinterpret_cast<void*>(&get_proc_hook);
    }
    return fn;
  }
  bool per_thread = e->per_thread || per_thread_asked;
  if (!per_thread) {  // CU_GET_PROC_ADDRESS_DEFAULT may give either form
    char ptsz[64];
    std::snprintf(ptsz, sizeof ptsz, "%s_ptsz", symbol);
    per_thread = fn == symbol_in(cuda, ptsz);
  }
  return hook_for(e->family, per_thread, fn);
}

// What the program is handed for `symbol` (a name as cuGetProcAddress or dlsym takes it), found
// as `fn`.
void* handed(const char* symbol, void* fn, bool per_thread_asked) noexcept {
  if (fn == nullptr || symbol == nullptr || symbol[0] != 'c' || symbol[1] != 'u') return fn;
  const bool get_proc = std::strncmp(symbol, "cuGetProcAddress", 16) == 0;
  const Entry* e = get_proc ? nullptr : entry(symbol);
  if (!get_proc && e == nullptr) return fn;
  void* cuda = driver();  // one handle for every question below
  const bool ours = is_hook(fn);
  if (ours && cuda == nullptr) {
    // This library's exported launch function, with no driver to call: null, said by dlerror(),
    // or an interposer's after this library.
    void* next = real_dlsym()(RTLD_NEXT, symbol);
    __asm__ volatile("" ::: "memory");  // no tail call: dlsym's caller must be this library
    return next;
  }
  if (cuda == nullptr) return fn;  // not the driver's: it is not loaded
  void* out = ours ? fn : handed_from(cuda, symbol, e, fn, per_thread_asked);
  dlclose(cuda);
  return out;
}

CUresult get_proc_hook(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  const auto driver = reinterpret_cast<GetProc>(g_get_proc.load());
  if (driver == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = driver(symbol, pfn, version, flags);
  if (r == CUDA_SUCCESS && pfn != nullptr)
    *pfn = handed(symbol, *pfn, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0);
  return r;
}

CUresult get_proc2_hook(const char* symbol, void** pfn, int version, cuuint64_t flags,
                        CUdriverProcAddressQueryResult* status) {
  const auto driver = reinterpret_cast<GetProc2>(g_get_proc2.load());
  if (driver == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const CUresult r = driver(symbol, pfn, version, flags, status);
  if (r == CUDA_SUCCESS && pfn != nullptr)
    *pfn = handed(symbol, *pfn, (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0);
  return r;
}

// A library linked to libcuda calls the exported launch functions: the driver's is the next one in
// the global scope, or libcuda's own where a library loaded it locally (dlopen RTLD_LOCAL).
std::atomic<void*> g_next[kFamilies][2];

template <class Fn, class... Args>
CUresult forward(Family f, bool per_thread, const char* name, CUstream s, Args... args) {
  notify(s, per_thread);
  void* p = g_next[f][per_thread].load(std::memory_order_relaxed);
  if (p == nullptr) {
    p = real_dlsym()(RTLD_NEXT, name);
    if (p == nullptr || is_hook(p)) p = driver_symbol(name);
    if (p == nullptr) {
      dlerror();
      return CUDA_ERROR_NOT_INITIALIZED;  // no driver in the process
    }
    g_next[f][per_thread].store(p, std::memory_order_relaxed);
  }
  return reinterpret_cast<Fn>(p)(args...);
}

}  // namespace

void* simprof_hook_dlsym(void* handle, const char* name) {
  return handed(name, real_dlsym()(handle, name), false);
}

SIMPROF_EXPORT void simprof_launch_hook_watch(simprof_launch_watcher fn, void* context) {
  t_watch = Watch{fn, context, g_generation.load()};
}

SIMPROF_EXPORT void simprof_launch_hook_retire() {
  pthread_rwlock_wrlock(&g_calls);  // no call inside a watcher after this
  g_generation.fetch_add(1);
  pthread_rwlock_unlock(&g_calls);
}

SIMPROF_EXPORT std::uint64_t simprof_launch_hook_entries() { return g_entries.load(); }

SIMPROF_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                       unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                       CUstream s, void** params, void** extra) {
  return forward<LaunchKernel>(kKernel, false, "cuLaunchKernel", s, f, gx, gy, gz, bx, by, bz,
                               shared, s, params, extra);
}

SIMPROF_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                            unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                            CUstream s, void** params, void** extra) {
  return forward<LaunchKernel>(kKernel, true, "cuLaunchKernel_ptsz", s, f, gx, gy, gz, bx, by, bz,
                               shared, s, params, extra);
}

SIMPROF_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params,
                                         void** extra) {
  return forward<LaunchKernelEx>(kKernelEx, false, "cuLaunchKernelEx",
                                 config != nullptr ? config->hStream : nullptr, config, f, params,
                                 extra);
}

SIMPROF_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f,
                                              void** params, void** extra) {
  return forward<LaunchKernelEx>(kKernelEx, true, "cuLaunchKernelEx_ptsz",
                                 config != nullptr ? config->hStream : nullptr, config, f, params,
                                 extra);
}

SIMPROF_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy,
                                                  unsigned gz, unsigned bx, unsigned by,
                                                  unsigned bz, unsigned shared, CUstream s,
                                                  void** params) {
  return forward<LaunchCooperative>(kCooperative, false, "cuLaunchCooperativeKernel", s, f, gx, gy,
                                    gz, bx, by, bz, shared, s, params);
}

SIMPROF_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                       unsigned gz, unsigned bx, unsigned by,
                                                       unsigned bz, unsigned shared, CUstream s,
                                                       void** params) {
  return forward<LaunchCooperative>(kCooperative, true, "cuLaunchCooperativeKernel_ptsz", s, f, gx,
                                    gy, gz, bx, by, bz, shared, s, params);
}

SIMPROF_EXPORT CUresult cuGraphLaunch(CUgraphExec g, CUstream s) {
  return forward<GraphLaunch>(kGraph, false, "cuGraphLaunch", s, g, s);
}

SIMPROF_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec g, CUstream s) {
  return forward<GraphLaunch>(kGraph, true, "cuGraphLaunch_ptsz", s, g, s);
}
