// SPDX-License-Identifier: MIT
// Definitions of the CUDA runtime's create and destroy calls that take the place of libcudart's in
// test_leaks (a C++ file: nvcc would see the device runtime's own declarations of some of them).
// Each counts the handles alive per kind and forwards to the real call (dlsym RTLD_NEXT); the armed
// one fails instead. Calls the runtime makes to itself from inside one of these are not counted.
#include "cuda_interpose.hpp"

#include "interpose.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

namespace simprof::cuda::leaktest {

namespace {

const char* const kKindNames[kKinds] = {
    "device allocations", "pinned allocations", "streams", "events", "graphs", "graph executables"};

std::atomic<long> g_live[kKinds];
std::atomic<long> g_fail_at{0};  // the call that fails, counted from arm(); 0: none
std::atomic<long> g_calls{0};
std::atomic<bool> g_fired{false};
thread_local int t_depth = 0;  // > 0 inside an interposed call: nested calls are the runtime's own

std::mutex g_mutex;
std::set<cudaStream_t> g_capturing_to_graph;  // their graph belongs to someone else

// Whether this call is the one to fail.
bool inject() {
  if (t_depth > 1 || g_fail_at.load() == 0) return false;
  if (g_calls.fetch_add(1) + 1 != g_fail_at.load()) return false;
  g_fired = true;
  return true;
}

template <class F>
F real(const char* name) {
  return simprof::testing::real_function<F>("test_leaks", name);
}

struct Depth {
  Depth() { ++t_depth; }
  ~Depth() { --t_depth; }
};

void count(Kind k, long d) {
  if (t_depth == 1) g_live[k] += d;
}

}  // namespace

Live live() {
  Live l{};
  for (int k = 0; k < kKinds; ++k) l[static_cast<std::size_t>(k)] = g_live[k].load();
  return l;
}

std::string diff(const Live& before, const Live& after) {
  std::string out;
  for (int k = 0; k < kKinds; ++k) {
    const auto i = static_cast<std::size_t>(k);
    if (before[i] != after[i])
      out += std::string(out.empty() ? "" : ", ") + kKindNames[k] + " " +
             std::to_string(before[i]) + " -> " + std::to_string(after[i]);
  }
  return out;
}

void arm(long n) {
  g_calls = 0;
  g_fired = false;
  g_fail_at = n;
}
void disarm() { g_fail_at = 0; }
bool fired() { return g_fired.load(); }

}  // namespace simprof::cuda::leaktest

using namespace simprof::cuda::leaktest;

// The real call, by name and signature (decltype cannot name one of several C++ overloads).
#define SIMPROF_REAL(fn, ...)                                      \
  [] {                                                             \
    static const auto f = real<cudaError_t (*)(__VA_ARGS__)>(#fn); \
    return f;                                                      \
  }()

namespace {

// A call that makes a handle of `kind`: it fails with `code` when armed, and counts what it made.
template <class... A>
cudaError_t make(Kind kind, cudaError_t code, cudaError_t (*real_fn)(A...), A... args) {
  Depth d;
  if (inject()) return code;
  const cudaError_t e = real_fn(args...);
  if (e == cudaSuccess && kind != kKinds) count(kind, +1);
  return e;
}

// A call that destroys a handle of `kind` (never made to fail).
template <class H>
cudaError_t unmake(Kind kind, cudaError_t (*real_fn)(H), H handle) {
  Depth d;
  const cudaError_t e = real_fn(handle);
  if (e == cudaSuccess && handle) count(kind, -1);
  return e;
}

}  // namespace

// --- the interposed runtime calls ---------------------------------------------------------------

extern "C" cudaError_t cudaMalloc(void** p, size_t n) {
  return make(kDeviceMemory, cudaErrorMemoryAllocation, SIMPROF_REAL(cudaMalloc, void**, size_t), p,
              n);
}
extern "C" cudaError_t cudaFree(void* p) {
  return unmake(kDeviceMemory, SIMPROF_REAL(cudaFree, void*), p);
}
extern "C" cudaError_t cudaMallocHost(void** p, size_t n) {
  return make(kHostMemory, cudaErrorMemoryAllocation, SIMPROF_REAL(cudaMallocHost, void**, size_t),
              p, n);
}
extern "C" cudaError_t cudaHostAlloc(void** p, size_t n, unsigned flags) {
  return make(kHostMemory, cudaErrorMemoryAllocation,
              SIMPROF_REAL(cudaHostAlloc, void**, size_t, unsigned), p, n, flags);
}
extern "C" cudaError_t cudaFreeHost(void* p) {
  return unmake(kHostMemory, SIMPROF_REAL(cudaFreeHost, void*), p);
}
extern "C" cudaError_t cudaStreamCreate(cudaStream_t* s) {
  return make(kStreams, cudaErrorMemoryAllocation, SIMPROF_REAL(cudaStreamCreate, cudaStream_t*),
              s);
}
extern "C" cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  return make(kStreams, cudaErrorMemoryAllocation,
              SIMPROF_REAL(cudaStreamCreateWithFlags, cudaStream_t*, unsigned), s, flags);
}
extern "C" cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned flags, int prio) {
  return make(kStreams, cudaErrorMemoryAllocation,
              SIMPROF_REAL(cudaStreamCreateWithPriority, cudaStream_t*, unsigned, int), s, flags,
              prio);
}
extern "C" cudaError_t cudaStreamDestroy(cudaStream_t s) {
  return unmake(kStreams, SIMPROF_REAL(cudaStreamDestroy, cudaStream_t), s);
}
extern "C" cudaError_t cudaEventCreate(cudaEvent_t* ev) {
  return make(kEvents, cudaErrorMemoryAllocation, SIMPROF_REAL(cudaEventCreate, cudaEvent_t*), ev);
}
extern "C" cudaError_t cudaEventCreateWithFlags(cudaEvent_t* ev, unsigned flags) {
  return make(kEvents, cudaErrorMemoryAllocation,
              SIMPROF_REAL(cudaEventCreateWithFlags, cudaEvent_t*, unsigned), ev, flags);
}
extern "C" cudaError_t cudaEventDestroy(cudaEvent_t ev) {
  return unmake(kEvents, SIMPROF_REAL(cudaEventDestroy, cudaEvent_t), ev);
}
extern "C" cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t s, cudaGraph_t g,
                                                     const cudaGraphNode_t* deps,
                                                     const cudaGraphEdgeData* edges, size_t n,
                                                     cudaStreamCaptureMode mode) {
  static const auto real_fn =
      SIMPROF_REAL(cudaStreamBeginCaptureToGraph, cudaStream_t, cudaGraph_t, const cudaGraphNode_t*,
                   const cudaGraphEdgeData*, size_t, cudaStreamCaptureMode);
  Depth d;
  const cudaError_t e = real_fn(s, g, deps, edges, n, mode);
  if (e == cudaSuccess) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_capturing_to_graph.insert(s);
  }
  return e;
}
extern "C" cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* g) {
  static const auto real_fn = SIMPROF_REAL(cudaStreamEndCapture, cudaStream_t, cudaGraph_t*);
  static const auto destroy = SIMPROF_REAL(cudaGraphDestroy, cudaGraph_t);
  Depth d;
  bool owned = true;  // a capture into an existing graph hands back that graph, not a new one
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    owned = g_capturing_to_graph.erase(s) == 0;
  }
  const bool fail = inject();
  const cudaError_t e = real_fn(s, g);
  if (fail) {  // the capture still ends, as a real failure would end it, and yields no graph
    if (e == cudaSuccess && owned && g && *g) destroy(*g);
    if (g) *g = nullptr;
    return cudaErrorStreamCaptureInvalidated;
  }
  if (e == cudaSuccess && owned && g && *g) count(kGraphs, +1);
  return e;
}
extern "C" cudaError_t cudaGraphCreate(cudaGraph_t* g, unsigned flags) {
  return make(kGraphs, cudaErrorMemoryAllocation,
              SIMPROF_REAL(cudaGraphCreate, cudaGraph_t*, unsigned), g, flags);
}
extern "C" cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  return unmake(kGraphs, SIMPROF_REAL(cudaGraphDestroy, cudaGraph_t), g);
}
extern "C" cudaError_t cudaGraphInstantiate(cudaGraphExec_t* x, cudaGraph_t g,
                                            unsigned long long flags) {
  return make(kGraphExecs, cudaErrorMemoryAllocation,
              SIMPROF_REAL(cudaGraphInstantiate, cudaGraphExec_t*, cudaGraph_t, unsigned long long),
              x, g, flags);
}
extern "C" cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x) {
  return unmake(kGraphExecs, SIMPROF_REAL(cudaGraphExecDestroy, cudaGraphExec_t), x);
}
// Calls between the allocations of a constructor: a failure there must release what came before.
// They make nothing to count (kKinds).
extern "C" cudaError_t cudaMemset(void* p, int v, size_t n) {
  return make(kKinds, cudaErrorInvalidValue, SIMPROF_REAL(cudaMemset, void*, int, size_t), p, v, n);
}
extern "C" cudaError_t cudaHostGetDevicePointer(void** dev, void* host, unsigned flags) {
  return make(kKinds, cudaErrorInvalidValue,
              SIMPROF_REAL(cudaHostGetDevicePointer, void**, void*, unsigned), dev, host, flags);
}
extern "C" cudaError_t cudaDeviceGetStreamPriorityRange(int* lo, int* hi) {
  return make(kKinds, cudaErrorInvalidValue,
              SIMPROF_REAL(cudaDeviceGetStreamPriorityRange, int*, int*), lo, hi);
}
extern "C" cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int dev) {
  return make(kKinds, cudaErrorInvalidValue,
              SIMPROF_REAL(cudaDeviceGetAttribute, int*, cudaDeviceAttr, int), v, a, dev);
}
