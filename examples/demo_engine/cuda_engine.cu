// SPDX-License-Identifier: MIT
#include "demo_engine/cuda_engine.hpp"

#include <stdexcept>
#include <string>

namespace simprof::engine {

namespace {

constexpr int kBlock = 256;
int blocks_for(long long n) { return static_cast<int>((n + kBlock - 1) / kBlock); }

__global__ void init_kernel(int n, Params p, State s, std::uint32_t seed) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e < n) init_env(e, p, s, seed);
}
__global__ void forces_kernel(int n, Params p, State s) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e < n) external_forces_env(e, p, s);
}
__global__ void contacts_kernel(int n, Params p, State s) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e < n) contacts_env(e, p, s);
}
__global__ void integrate_kernel(int n, Params p, State s) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e < n) integrate_env(e, p, s);
}
__global__ void imu_kernel(int n, Params p, State s, Sensors out) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e < n) imu_env(e, p, s, out);
}
// One thread per pixel: the same depth_pixel() the CPU engine calls in its per-env loop.
__global__ void render_kernel(long long n_pixels, Params p, State s, Sensors out) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_pixels) return;
  const int per_env = p.image_width * p.image_height;
  const int e = static_cast<int>(i / per_env);
  const int pix = static_cast<int>(i % per_env);
  out.depth[i] = depth_pixel(e, pix % p.image_width, pix / p.image_width, p, s);
}
__global__ void record_kernel(int n, Params p, State s, Sensors out, const long long* frame) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e < n) record_env(e, *frame, p, s, out);
}
__global__ void advance_frame_kernel(long long* frame) { ++*frame; }

template <bool kTimed>
__global__ void solver_kernel(int n, Params p, State s, const float* target, TimerView timers) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= n) return;
  if constexpr (kTimed) {
    TimerChain<> chain(timers, e);
    solver_env(e, p, s, target, chain);
  } else {
    NoTimers chain;
    solver_env(e, p, s, target, chain);
  }
}

}  // namespace

CudaEngine::CudaEngine(const Params& params, int n_envs, cudaStream_t stream, std::uint32_t seed)
    : params_(params), n_envs_(n_envs) {
  if (n_envs <= 0)
    throw std::invalid_argument("CudaEngine: n_envs = " + std::to_string(n_envs) +
                                " (expected > 0)");
  const std::size_t n = static_cast<std::size_t>(n_envs) * params.n_spheres;
  for (auto* b : {&px_, &py_, &pz_, &vx_, &vy_, &vz_, &fx_, &fy_, &fz_})
    *b = cuda::DeviceBuffer<float>(n);
  imu_prev_ = cuda::DeviceBuffer<float>(3 * static_cast<std::size_t>(n_envs));
  imu_ = cuda::DeviceBuffer<float>(6 * static_cast<std::size_t>(n_envs));
  depth_ = cuda::DeviceBuffer<float>(static_cast<std::size_t>(n_envs) * params.image_width *
                                     params.image_height);
  record_ = cuda::DeviceBuffer<float>(static_cast<std::size_t>(n_envs) * params.record_frames * 4);
  frame_ = cuda::DeviceBuffer<long long>(1);
  targets_ = cuda::DeviceBuffer<float>(3 * static_cast<std::size_t>(n_envs));
  targets_.fill_zero(stream);
  for (auto* b : {&imu_prev_, &imu_, &depth_, &record_}) b->fill_zero(stream);
  frame_.fill_zero(stream);
  init_kernel<<<blocks_for(n_envs), kBlock, 0, stream>>>(n_envs, params_, state(), seed);
  SIMPROF_CUDA_CHECK_LAUNCH("init_kernel");
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
}

State CudaEngine::state() const {
  return State{px_.data(), py_.data(), pz_.data(), vx_.data(), vy_.data(),
               vz_.data(), fx_.data(), fy_.data(), fz_.data()};
}

Sensors CudaEngine::sensors() const {
  return Sensors{imu_prev_.data(), imu_.data(), depth_.data(), record_.data()};
}

void CudaEngine::attach(StepProfiler& prof) { prof_ = &prof; }

void CudaEngine::enqueue_step(cudaStream_t stream) {
  const State s = state();
  const int n = n_envs_;
  const int blocks = blocks_for(n);
  {
    SIMPROF_STAGE(prof_, "physics");
    for (int sub = 0; sub < params_.substeps; ++sub) {
      {
        SIMPROF_STAGE(prof_, "physics/forces");
        forces_kernel<<<blocks, kBlock, 0, stream>>>(n, params_, s);
        SIMPROF_CUDA_CHECK_LAUNCH("forces_kernel");
      }
      {
        SIMPROF_STAGE(prof_, "physics/contacts");
        contacts_kernel<<<blocks, kBlock, 0, stream>>>(n, params_, s);
        SIMPROF_CUDA_CHECK_LAUNCH("contacts_kernel");
      }
      {
        SIMPROF_STAGE(prof_, "physics/integrate");
        integrate_kernel<<<blocks, kBlock, 0, stream>>>(n, params_, s);
        SIMPROF_CUDA_CHECK_LAUNCH("integrate_kernel");
      }
    }
  }
  enqueue_sensors(stream);
}

void CudaEngine::enqueue_sensors(cudaStream_t stream) {
  const State s = state();
  const Sensors out = sensors();
  const int n = n_envs_;
  const int blocks = blocks_for(n);
  {
    SIMPROF_STAGE(prof_, "sensors/Imu");
    imu_kernel<<<blocks, kBlock, 0, stream>>>(n, params_, s, out);
    SIMPROF_CUDA_CHECK_LAUNCH("imu_kernel");
  }
  {
    SIMPROF_STAGE(prof_, "rendering");
    const long long pixels = static_cast<long long>(n) * params_.image_width * params_.image_height;
    render_kernel<<<blocks_for(pixels), kBlock, 0, stream>>>(pixels, params_, s, out);
    SIMPROF_CUDA_CHECK_LAUNCH("render_kernel");
  }
  {
    SIMPROF_STAGE(prof_, "recorders");
    record_kernel<<<blocks, kBlock, 0, stream>>>(n, params_, s, out, frame_.data());
    SIMPROF_CUDA_CHECK_LAUNCH("record_kernel");
    advance_frame_kernel<<<1, 1, 0, stream>>>(frame_.data());
    SIMPROF_CUDA_CHECK_LAUNCH("advance_frame_kernel");
  }
}

void CudaEngine::enqueue_solver(cudaStream_t stream, const TimerView* timers) {
  SIMPROF_STAGE(prof_, "physics");
  const float* target = params_.control_gain > 0.0f ? targets_.data() : nullptr;
  const int blocks = blocks_for(n_envs_);
  if (timers)
    solver_kernel<true><<<blocks, kBlock, 0, stream>>>(n_envs_, params_, state(), target, *timers);
  else
    solver_kernel<false>
        <<<blocks, kBlock, 0, stream>>>(n_envs_, params_, state(), target, TimerView{});
  SIMPROF_CUDA_CHECK_LAUNCH("solver_kernel");
}

void CudaEngine::set_targets(const std::vector<float>& targets, cudaStream_t stream) {
  if (targets.size() != targets_.size())
    throw std::invalid_argument("CudaEngine::set_targets: " + std::to_string(targets.size()) +
                                " floats (expected 3 per env: " + std::to_string(targets_.size()) +
                                ")");
  targets_.copy_from_host(targets.data(), targets.size(), stream);
}

void CudaEngine::publish_positions(cudaStream_t stream, float* x, float* y, float* z) const {
  const std::size_t bytes = px_.size() * sizeof(float);
  SIMPROF_CUDA_CHECK(cudaMemcpyAsync(x, px_.data(), bytes, cudaMemcpyDeviceToDevice, stream));
  SIMPROF_CUDA_CHECK(cudaMemcpyAsync(y, py_.data(), bytes, cudaMemcpyDeviceToDevice, stream));
  SIMPROF_CUDA_CHECK(cudaMemcpyAsync(z, pz_.data(), bytes, cudaMemcpyDeviceToDevice, stream));
}

void CudaEngine::enqueue_render_from(cudaStream_t stream, const float* x, const float* y,
                                     const float* z) {
  SIMPROF_STAGE(prof_, "rendering");
  State s{};
  s.px = const_cast<float*>(x);  // depth_pixel() only reads positions
  s.py = const_cast<float*>(y);
  s.pz = const_cast<float*>(z);
  const long long pixels =
      static_cast<long long>(n_envs_) * params_.image_width * params_.image_height;
  render_kernel<<<blocks_for(pixels), kBlock, 0, stream>>>(pixels, params_, s, sensors());
  SIMPROF_CUDA_CHECK_LAUNCH("render_kernel");
}

std::vector<float> CudaEngine::depth(cudaStream_t stream) const { return depth_.to_host(stream); }

std::vector<float> CudaEngine::snapshot(cudaStream_t stream) const {
  const std::size_t n = px_.size();
  std::vector<float> out(6 * n);
  std::size_t off = 0;
  for (const auto* b : {&px_, &py_, &pz_, &vx_, &vy_, &vz_}) {
    b->copy_to_host(out.data() + off, n, stream);
    off += n;
  }
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
  return out;
}

}  // namespace simprof::engine
