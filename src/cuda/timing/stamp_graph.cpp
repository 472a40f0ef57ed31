// SPDX-License-Identifier: MIT
#include "stamp_graph.hpp"

#include "simprof/cuda/runtime/error.hpp"

namespace simprof::cuda::detail {

cudaError_t all_nodes(cudaGraph_t g, std::vector<cudaGraphNode_t>& out) {
  std::size_t n = 0;
  cudaError_t e = cudaGraphGetNodes(g, nullptr, &n);
  if (e != cudaSuccess) return e;
  out.resize(n);
  if (n == 0) return cudaSuccess;
  e = cudaGraphGetNodes(g, out.data(), &n);
  out.resize(n);
  return e;
}

cudaError_t root_nodes(cudaGraph_t g, std::vector<cudaGraphNode_t>& out) {
  std::size_t n = 0;
  cudaError_t e = cudaGraphGetRootNodes(g, nullptr, &n);
  if (e != cudaSuccess) return e;
  out.resize(n);
  if (n == 0) return cudaSuccess;
  e = cudaGraphGetRootNodes(g, out.data(), &n);
  out.resize(n);
  return e;
}

cudaError_t edges_of(cudaGraphNode_t n, bool dependents, std::vector<cudaGraphNode_t>& nodes,
                     std::vector<cudaGraphEdgeData>& data) {
  std::size_t count = 0;
  auto call = [&](cudaGraphNode_t* p, cudaGraphEdgeData* d) {
#if CUDART_VERSION >= 13000
    return dependents ? cudaGraphNodeGetDependentNodes(n, p, d, &count)
                      : cudaGraphNodeGetDependencies(n, p, d, &count);
#else
    return dependents ? cudaGraphNodeGetDependentNodes_v2(n, p, d, &count)
                      : cudaGraphNodeGetDependencies_v2(n, p, d, &count);
#endif
  };
  cudaError_t e = call(nullptr, nullptr);
  if (e != cudaSuccess) return e;
  nodes.resize(count);
  data.resize(count);
  if (count == 0) return cudaSuccess;
  e = call(nodes.data(), data.data());
  nodes.resize(count);
  data.resize(count);
  return e;
}

bool default_edge(const cudaGraphEdgeData& d) noexcept {
  return d.from_port == 0 && d.to_port == 0 && d.type == cudaGraphDependencyTypeDefault;
}

cudaError_t add_edge(cudaGraph_t g, cudaGraphNode_t from, cudaGraphNode_t to) {
#if CUDART_VERSION >= 13000
  return cudaGraphAddDependencies(g, &from, &to, nullptr, 1);
#else
  return cudaGraphAddDependencies(g, &from, &to, 1);
#endif
}

cudaError_t remove_edge(cudaGraph_t g, cudaGraphNode_t from, cudaGraphNode_t to) {
#if CUDART_VERSION >= 13000
  return cudaGraphRemoveDependencies(g, &from, &to, nullptr, 1);
#else
  return cudaGraphRemoveDependencies(g, &from, &to, 1);
#endif
}

cudaError_t add_stamp_node(cudaGraph_t g, const void* func, void** args,
                           const cudaGraphNode_t* deps, std::size_t n_deps, int& priority,
                           cudaGraphNode_t& out) {
  cudaKernelNodeParams p{};
  p.gridDim = dim3(1);
  p.blockDim = dim3(1);
  p.func = const_cast<void*>(func);
  p.kernelParams = args;
  out = nullptr;
  if (const cudaError_t e = cudaGraphAddKernelNode(&out, g, deps, n_deps, &p); e != cudaSuccess)
    return e;
  if (priority != 0) {
    cudaKernelNodeAttrValue v{};
    v.priority = priority;
    if (cudaGraphKernelNodeSetAttribute(out, cudaKernelNodeAttributePriority, &v) != cudaSuccess) {
      (void)cudaGetLastError();  // not left for the next launch check to find
      priority = 0;
    }
  }
  return cudaSuccess;
}

namespace {

// A failed call of a stamped copy's, named (CudaError).
void check(cudaError_t e, const char* call, int line) {
  if (e != cudaSuccess) throw_cuda_error(e, call, __FILE__, line);
}

}  // namespace

StampedCopy::StampedCopy(cudaGraph_t graph) {
  check(cudaGraphClone(copy_.out(), graph), "cudaGraphClone", __LINE__);
  check(root_nodes(copy_.get(), roots_), "cudaGraphGetRootNodes", __LINE__);
}

cudaGraphNode_t StampedCopy::clone_of(cudaGraphNode_t original) const {
  cudaGraphNode_t mine = nullptr;
  check(cudaGraphNodeFindInClone(&mine, original, copy_.get()), "cudaGraphNodeFindInClone",
        __LINE__);
  return mine;
}

cudaGraphNode_t StampedCopy::add_stamp(const void* func, void** args, const cudaGraphNode_t* after,
                                       std::size_t n_after, int& priority) {
  cudaGraphNode_t node = nullptr;
  check(add_stamp_node(copy_.get(), func, args, after, n_after, priority, node),
        "cudaGraphAddKernelNode (a stamp)", __LINE__);
  return node;
}

void StampedCopy::add_edge(cudaGraphNode_t from, cudaGraphNode_t to) {
  check(detail::add_edge(copy_.get(), from, to), "cudaGraphAddDependencies", __LINE__);
}

void StampedCopy::remove_edge(cudaGraphNode_t from, cudaGraphNode_t to) {
  check(detail::remove_edge(copy_.get(), from, to), "cudaGraphRemoveDependencies", __LINE__);
}

void StampedCopy::before_roots(cudaGraphNode_t node) {
  for (const cudaGraphNode_t r : roots_) add_edge(node, r);
}

}  // namespace simprof::cuda::detail
