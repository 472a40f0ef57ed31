// SPDX-License-Identifier: MIT
#include "demo_engine/mixed_engine.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>

#include "simprof/cuda/runtime/error.hpp"

namespace simprof::engine {

namespace {

constexpr int kBlock = 256;
int blocks_for(long long n) { return static_cast<int>((n + kBlock - 1) / kBlock); }

struct Fp32 {
  using Raw = float;
  static __device__ float load(Raw x) { return x; }
  static __device__ Raw store(float x) { return x; }
};
struct Fp16 {
  using Raw = unsigned short;
  static __device__ float load(Raw x) { return __half2float(__ushort_as_half(x)); }
  static __device__ Raw store(float x) { return __half_as_ushort(__float2half_rn(x)); }
};
struct Bf16 {
  using Raw = unsigned short;
  static __device__ float load(Raw x) { return __bfloat162float(__ushort_as_bfloat16(x)); }
  static __device__ Raw store(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }
};

template <class S>
struct Arrays {
  typename S::Raw *px, *py, *pz, *vx, *vy, *vz;
};

template <class S>
__global__ void mixed_solver_kernel(int n, Params p, Arrays<S> a) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= n) return;
  constexpr int M = MixedEngine::kMaxSpheres;
  float px[M], py[M], pz[M], vx[M], vy[M], vz[M], fx[M], fy[M], fz[M];
  const int base = e * p.n_spheres;
  for (int i = 0; i < p.n_spheres; ++i) {
    px[i] = S::load(a.px[base + i]);
    py[i] = S::load(a.py[base + i]);
    pz[i] = S::load(a.pz[base + i]);
    vx[i] = S::load(a.vx[base + i]);
    vy[i] = S::load(a.vy[base + i]);
    vz[i] = S::load(a.vz[base + i]);
  }
  const State local{px, py, pz, vx, vy, vz, fx, fy, fz};
  NoTimers chain;
  solver_env(0, p, local, nullptr, chain);  // env 0 of the local arrays
  for (int i = 0; i < p.n_spheres; ++i) {
    a.px[base + i] = S::store(px[i]);
    a.py[base + i] = S::store(py[i]);
    a.pz[base + i] = S::store(pz[i]);
    a.vx[base + i] = S::store(vx[i]);
    a.vy[base + i] = S::store(vy[i]);
    a.vz[base + i] = S::store(vz[i]);
  }
}

template <class S>
__global__ void store_kernel(std::size_t n, const float* src, typename S::Raw* dst) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = S::store(src[i]);
}
template <class S>
__global__ void load_kernel(std::size_t n, const typename S::Raw* src, float* dst) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = S::load(src[i]);
}

std::size_t element_bytes(Storage s) { return s == Storage::kFp32 ? 4 : 2; }

template <class F>
void dispatch(Storage s, F&& f) {
  switch (s) {
    case Storage::kFp32:
      return f(Fp32{});
    case Storage::kFp16:
      return f(Fp16{});
    case Storage::kBf16:
      return f(Bf16{});
  }
}

}  // namespace

std::string to_string(Storage s) {
  switch (s) {
    case Storage::kFp32:
      return "fp32";
    case Storage::kFp16:
      return "fp16";
    case Storage::kBf16:
      return "bf16";
  }
  return "?";
}

Storage parse_storage(const std::string& s) {
  if (s == "fp32") return Storage::kFp32;
  if (s == "fp16") return Storage::kFp16;
  if (s == "bf16") return Storage::kBf16;
  throw std::invalid_argument("storage '" + s + "' (expected fp32, fp16 or bf16)");
}

MixedEngine::MixedEngine(const Params& params, int n_envs, Storage storage, cudaStream_t stream,
                         std::uint32_t seed)
    : params_(params), n_envs_(n_envs), storage_(storage) {
  if (params.n_spheres < 1 || params.n_spheres > kMaxSpheres)
    throw std::invalid_argument("MixedEngine: n_spheres = " + std::to_string(params.n_spheres) +
                                " (expected 1.." + std::to_string(kMaxSpheres) + ")");
  const CudaEngine init(params, n_envs, stream, seed);  // validates n_envs, initialises in FP32
  const std::size_t bytes = init.bodies() * element_bytes(storage);
  for (auto* b : {&px_, &py_, &pz_, &vx_, &vy_, &vz_})
    *b = cuda::DeviceBuffer<unsigned char>(bytes);
  load_from(init, stream);
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
}

cuda::Dtype MixedEngine::dtype() const {
  return storage_ == Storage::kFp32   ? cuda::Dtype::kF32
         : storage_ == Storage::kFp16 ? cuda::Dtype::kF16
                                      : cuda::Dtype::kBF16;
}

const void* MixedEngine::array(int i) const {
  const cuda::DeviceBuffer<unsigned char>* a[] = {&px_, &py_, &pz_, &vx_, &vy_, &vz_};
  if (i < 0 || i > 5)
    throw std::invalid_argument("MixedEngine::array: " + std::to_string(i) + " (expected 0..5)");
  return a[i]->data();
}

std::size_t MixedEngine::bodies() const { return px_.size() / element_bytes(storage_); }

std::size_t MixedEngine::state_bytes() const { return 6 * px_.size(); }

void MixedEngine::enqueue_step(cudaStream_t stream) {
  dispatch(storage_, [&](auto s) {
    using S = decltype(s);
    using Raw = typename S::Raw;
    const Arrays<S> a{reinterpret_cast<Raw*>(px_.data()), reinterpret_cast<Raw*>(py_.data()),
                      reinterpret_cast<Raw*>(pz_.data()), reinterpret_cast<Raw*>(vx_.data()),
                      reinterpret_cast<Raw*>(vy_.data()), reinterpret_cast<Raw*>(vz_.data())};
    mixed_solver_kernel<S><<<blocks_for(n_envs_), kBlock, 0, stream>>>(n_envs_, params_, a);
  });
  SIMPROF_CUDA_CHECK_LAUNCH("mixed_solver_kernel");
}

void MixedEngine::load_from(const CudaEngine& reference, cudaStream_t stream) {
  const State r = reference.state();
  const std::size_t n = reference.bodies();
  if (n != bodies())
    throw std::invalid_argument("MixedEngine::load_from: the reference has " + std::to_string(n) +
                                " bodies (expected " + std::to_string(bodies()) + ")");
  const float* src[] = {r.px, r.py, r.pz, r.vx, r.vy, r.vz};
  unsigned char* dst[] = {px_.data(), py_.data(), pz_.data(), vx_.data(), vy_.data(), vz_.data()};
  dispatch(storage_, [&](auto s) {
    using S = decltype(s);
    for (int i = 0; i < 6; ++i)
      store_kernel<S><<<blocks_for(static_cast<long long>(n)), kBlock, 0, stream>>>(
          n, src[i], reinterpret_cast<typename S::Raw*>(dst[i]));
  });
  SIMPROF_CUDA_CHECK_LAUNCH("store_kernel");
}

std::vector<float> MixedEngine::snapshot(cudaStream_t stream) const {
  const std::size_t n = bodies();
  cuda::DeviceBuffer<float> tmp(6 * n);
  const unsigned char* src[] = {px_.data(), py_.data(), pz_.data(),
                                vx_.data(), vy_.data(), vz_.data()};
  dispatch(storage_, [&](auto s) {
    using S = decltype(s);
    for (int i = 0; i < 6; ++i)
      load_kernel<S><<<blocks_for(static_cast<long long>(n)), kBlock, 0, stream>>>(
          n, reinterpret_cast<const typename S::Raw*>(src[i]), tmp.data() + i * n);
  });
  SIMPROF_CUDA_CHECK_LAUNCH("load_kernel");
  return tmp.to_host(stream);
}

StateSums state_sums(const CudaEngine& reference, const MixedEngine& variant, cudaStream_t stream,
                     cuda::DeviceComparer* comparer) {
  const std::size_t n = reference.bodies();
  StateSums out;
  if (comparer) {
    const State r = reference.state();
    const float* arrays[] = {r.px, r.py, r.pz, r.vx, r.vy, r.vz};
    for (int i = 0; i < 6; ++i)
      (i < 3 ? out.positions : out.velocities) +=
          comparer->sums(arrays[i], variant.array(i), variant.dtype(), n, stream);
    return out;
  }
  const std::vector<float> r = reference.snapshot(stream), v = variant.snapshot(stream);
  out.positions = error_sums(r.data(), v.data(), 3 * n);
  out.velocities = error_sums(r.data() + 3 * n, v.data() + 3 * n, 3 * n);
  return out;
}

}  // namespace simprof::engine
