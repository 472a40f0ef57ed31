// SPDX-License-Identifier: MIT
// What a stamped copy's nodes are: kernels (names, launch shapes, as Kineto writes them), copies
// and memsets, read from the graph through the runtime and the driver.
#include <cuda.h>  // the driver API's types: kernel node parameters and function names

#include <algorithm>

#include "../runtime/demangle.hpp"
#include "kernel_timer_impl.hpp"
#include "simprof/cuda/runtime/error.hpp"

namespace simprof::cuda {

namespace {

const char* kind_name(cudaGraphNodeType t) {
  switch (t) {
    case cudaGraphNodeTypeKernel:
      return "kernel";
    case cudaGraphNodeTypeMemcpy:
      return "memcpy";
    case cudaGraphNodeTypeMemset:
      return "memset";
    case cudaGraphNodeTypeHost:
      return "host";
    case cudaGraphNodeTypeGraph:
      return "graph";
    case cudaGraphNodeTypeWaitEvent:
      return "event wait";
    case cudaGraphNodeTypeEventRecord:
      return "event record";
    case cudaGraphNodeTypeMemAlloc:
      return "mem alloc";
    case cudaGraphNodeTypeMemFree:
      return "mem free";
    case cudaGraphNodeTypeConditional:
      return "conditional";
    default:
      return "node";
  }
}

using KernelParamsFn = CUresult (*)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*);
using FuncNameFn = CUresult (*)(const char**, CUfunction);
using KernelNameFn = CUresult (*)(const char**, CUkernel);
using FuncAttrFn = CUresult (*)(int*, CUfunction_attribute, CUfunction);
using KernelAttrFn = CUresult (*)(int*, CUfunction_attribute, CUkernel, CUdevice);

// A kernel node's function name, through the driver (kernels launched through the runtime and
// the driver alike: torch's, Triton's, CuPy's raw kernels), demangled; and its launch's shape,
// registers and shared memory, as Kineto writes them.
void describe_kernel(cudaGraphNode_t node, int device, NodeInfo& info) {
  static const auto params =
      reinterpret_cast<KernelParamsFn>(detail::driver_entry_point("cuGraphKernelNodeGetParams"));
  // Both came with CUDA 12.3: asked for at that version.
  static const auto func_name =
      reinterpret_cast<FuncNameFn>(detail::driver_entry_point("cuFuncGetName", 12030));
  static const auto kern_name =
      reinterpret_cast<KernelNameFn>(detail::driver_entry_point("cuKernelGetName", 12030));
  static const auto func_attr =
      reinterpret_cast<FuncAttrFn>(detail::driver_entry_point("cuFuncGetAttribute"));
  static const auto kern_attr =
      reinterpret_cast<KernelAttrFn>(detail::driver_entry_point("cuKernelGetAttribute", 12000));
  info.name = "kernel";
  CUDA_KERNEL_NODE_PARAMS p{};
  if (!params || params(reinterpret_cast<CUgraphNode>(node), &p) != CUDA_SUCCESS) return;
  const char* name = nullptr;
  int regs = 0, smem = 0;
  auto attr = [&](CUfunction_attribute a, int& v) {
    v = 0;
    if (p.func && func_attr) return func_attr(&v, a, p.func) == CUDA_SUCCESS;
    return p.kern && kern_attr && kern_attr(&v, a, p.kern, device) == CUDA_SUCCESS;
  };
  if (p.func && func_name && func_name(&name, p.func) == CUDA_SUCCESS && name)
    info.name = detail::demangle(name);
  else if (p.kern && kern_name && kern_name(&name, p.kern) == CUDA_SUCCESS && name)
    info.name = detail::demangle(name);
  info.grid = Dim3{static_cast<std::int32_t>(p.gridDimX), static_cast<std::int32_t>(p.gridDimY),
                   static_cast<std::int32_t>(p.gridDimZ)};
  info.block = Dim3{static_cast<std::int32_t>(p.blockDimX), static_cast<std::int32_t>(p.blockDimY),
                    static_cast<std::int32_t>(p.blockDimZ)};
  if (attr(CU_FUNC_ATTRIBUTE_NUM_REGS, regs)) info.registers = static_cast<std::uint32_t>(regs);
  if (!attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, smem)) smem = 0;
  info.shared_memory = static_cast<std::uint32_t>(smem) + p.sharedMemBytes;
}

// Which side of a copy `ptr` is on, for a copy whose kind the runtime works out
// (cudaMemcpyDefault).
bool on_device_memory(const void* ptr) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

}  // namespace

namespace detail {

// A node as the trace shows it: kernels, copies and memsets (the rest are timed, not traced).
void describe_node(cudaGraphNode_t node, cudaGraphNodeType type, int device, NodeInfo& info) {
  info.kernel = type == cudaGraphNodeTypeKernel;
  info.name = kind_name(type);
  if (info.kernel) {
    describe_kernel(node, device, info);
    info.traced = SpanKind::kKernel;
  } else if (type == cudaGraphNodeTypeMemset) {
    cudaMemsetParams m{};
    if (cudaGraphMemsetNodeGetParams(node, &m) == cudaSuccess) {
      info.traced = SpanKind::kMemset;
      info.bytes = std::uint64_t{m.elementSize} * m.width * std::max<std::size_t>(m.height, 1);
    } else {
      (void)cudaGetLastError();
    }
  } else if (type == cudaGraphNodeTypeMemcpy) {
    cudaMemcpy3DParms m{};
    if (cudaGraphMemcpyNodeGetParams(node, &m) == cudaSuccess) {
      info.traced = SpanKind::kMemcpy;
      info.bytes = std::uint64_t{m.extent.width} * std::max<std::size_t>(m.extent.height, 1) *
                   std::max<std::size_t>(m.extent.depth, 1);
      bool from_device = m.srcArray != nullptr, to_device = m.dstArray != nullptr;
      switch (m.kind) {
        case cudaMemcpyHostToDevice:
          to_device = true;
          break;
        case cudaMemcpyDeviceToHost:
          from_device = true;
          break;
        case cudaMemcpyDeviceToDevice:
          from_device = to_device = true;
          break;
        case cudaMemcpyHostToHost:
          break;
        default:
          from_device = from_device || on_device_memory(m.srcPtr.ptr);
          to_device = to_device || on_device_memory(m.dstPtr.ptr);
      }
      info.copy = from_device ? (to_device ? CopyKind::kDtoD : CopyKind::kDtoH)
                              : (to_device ? CopyKind::kHtoD : CopyKind::kHtoH);
    } else {
      (void)cudaGetLastError();
    }
  }
}

}  // namespace detail

}  // namespace simprof::cuda
