// SPDX-License-Identifier: MIT
// A stand-in libcuda.so.1 for the launch hook's test (no GPU): cuGetProcAddress and the launch
// entry points, each counting its calls and keeping the stream it was given.
#include <cuda.h>
#include <dlfcn.h>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

extern "C" {
// Calls of kernel, kernel_ptsz, ex, ex_ptsz, cooperative, cooperative_ptsz, graph, graph_ptsz.
__attribute__((visibility("default"))) int fake_calls[8];
__attribute__((visibility("default"))) void* fake_stream;  // the last launch's
// CU_GET_PROC_ADDRESS_DEFAULT gives the per-thread form (as under
// CUDA_API_PER_THREAD_DEFAULT_STREAM).
__attribute__((visibility("default"))) int fake_default_per_thread;
}

namespace {
CUresult count(int which, CUstream s) {
  ++fake_calls[which];
  fake_stream = s;
  return CUDA_SUCCESS;
}
}  // namespace

FAKE_EXPORT CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, unsigned, CUstream s, void**, void**) {
  return count(0, s);
}
FAKE_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                         unsigned, unsigned, unsigned, CUstream s, void**, void**) {
  return count(1, s);
}
FAKE_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* c, CUfunction, void**, void**) {
  return count(2, c->hStream);
}
FAKE_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* c, CUfunction, void**, void**) {
  return count(3, c->hStream);
}
FAKE_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                               unsigned, unsigned, unsigned, CUstream s, void**) {
  return count(4, s);
}
FAKE_EXPORT CUresult cuGraphLaunch(CUgraphExec, CUstream s) { return count(6, s); }
FAKE_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec, CUstream s) { return count(7, s); }

// Names as the driver takes them: the base name, the per-thread form by flag.
FAKE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult* status) {
  static void* const self = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  char name[96] = {};
  __builtin_snprintf(name, sizeof name, "%s%s", symbol,
                     ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ||
                      (flags == CU_GET_PROC_ADDRESS_DEFAULT && fake_default_per_thread)) &&
                             __builtin_strncmp(symbol, "cuGetProc", 9) != 0
                         ? "_ptsz"
                         : "");
  if (__builtin_strcmp(symbol, "cuGetProcAddress") == 0)
    __builtin_snprintf(name, sizeof name, "cuGetProcAddress_v2");
  *pfn = dlsym(self, name);
  if (status != nullptr)
    *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

// dlsym(RTLD_NEXT) from here must find the next library's probe (fake_next.cpp), not this one's.
FAKE_EXPORT int simprof_fake_probe() { return 1; }
FAKE_EXPORT void* fake_next_probe() {
  void* p = dlsym(RTLD_NEXT, "simprof_fake_probe");
  __asm__ volatile("" ::: "memory");  // no tail call: dlsym's caller must be this library
  return p;
}
