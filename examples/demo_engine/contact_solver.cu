// SPDX-License-Identifier: MIT
#include "demo_engine/contact_solver.hpp"

#include <stdexcept>
#include <string>

#include "simprof/cuda/runtime/error.hpp"

namespace simprof::engine {

namespace {

constexpr int kBlock = 256;
int blocks_for(long long n) { return static_cast<int>((n + kBlock - 1) / kBlock); }

__global__ void predict_kernel(int n, Params p, State s, FrameStart q, unsigned char* active,
                               SolverLoopState* loop) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e == 0) {
    loop->active = 0;
    loop->iteration = 0;
    loop->converged_at = 0;
  }
  if (e >= n) return;
  pbd_predict_env(e, p, s, q);
  active[e] = 1;
}

template <bool kTimed>
__global__ void project_kernel(int n, Params p, State s, unsigned char* active, float tolerance,
                               SolverLoopState* loop, TimerView timers) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= n || !active[e]) return;
  if constexpr (kTimed) {
    const int pass = loop->iteration;
    TimerChain<> chain(timers, e);
    const float residual = pbd_project_env(e, p, s);
    if (pass < timers.rows) chain.lap(pass);
    if (residual > tolerance)
      atomicAdd(&loop->active, 1u);
    else
      active[e] = 0;
  } else {
    const float residual = pbd_project_env(e, p, s);
    if (residual > tolerance)
      atomicAdd(&loop->active, 1u);
    else
      active[e] = 0;
  }
}

__global__ void check_kernel(SolverLoopState* loop, int max_iterations, cuda::LoopCondition c) {
  const int it = ++loop->iteration;
  const bool converged = loop->active == 0;
  if (converged && loop->converged_at == 0) loop->converged_at = it;
  loop->active = 0;
  cuda::set_condition(c, !converged && it < max_iterations);
}

__global__ void finish_kernel(int n, Params p, State s, FrameStart q) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e < n) pbd_finish_env(e, p, s, q);
}

__global__ void end_frame_kernel(SolverLoopState* loop, int* history, int history_size) {
  history[loop->step % history_size] = loop->converged_at ? loop->converged_at : -loop->iteration;
  ++loop->step;
}

}  // namespace

ContactSolver::ContactSolver(CudaEngine& engine, int max_iterations, float tolerance)
    : engine_(engine), max_iterations_(max_iterations), tolerance_(tolerance) {
  if (max_iterations < 1)
    throw std::invalid_argument(
        "ContactSolver: max_iterations = " + std::to_string(max_iterations) + " (expected >= 1)");
  if (!(tolerance > 0.0f))
    throw std::invalid_argument("ContactSolver: tolerance = " + std::to_string(tolerance) +
                                " (expected > 0)");
  const std::size_t bodies = engine.bodies();
  x0_ = cuda::DeviceBuffer<float>(bodies);
  y0_ = cuda::DeviceBuffer<float>(bodies);
  z0_ = cuda::DeviceBuffer<float>(bodies);
  active_ = cuda::DeviceBuffer<unsigned char>(static_cast<std::size_t>(engine.n_envs()));
  loop_ = cuda::DeviceBuffer<SolverLoopState>(1);
  history_ = cuda::DeviceBuffer<int>(kHistory);
  scratch_flag_ = cuda::DeviceBuffer<unsigned>(1);
  loop_.fill_zero(nullptr);
  history_.fill_zero(nullptr);
  SIMPROF_CUDA_CHECK(cudaDeviceSynchronize());
}

void ContactSolver::enqueue_pass(cudaStream_t stream, const cuda::LoopCondition& c,
                                 const TimerView* timers) {
  const int n = engine_.n_envs();
  const State s = engine_.state();
  if (timers)
    project_kernel<true><<<blocks_for(n), kBlock, 0, stream>>>(
        n, engine_.params(), s, active_.data(), tolerance_, loop_.data(), *timers);
  else
    project_kernel<false><<<blocks_for(n), kBlock, 0, stream>>>(
        n, engine_.params(), s, active_.data(), tolerance_, loop_.data(), TimerView{});
  SIMPROF_CUDA_CHECK_LAUNCH("project_kernel");
  check_kernel<<<1, 1, 0, stream>>>(loop_.data(), max_iterations_, c);
  SIMPROF_CUDA_CHECK_LAUNCH("check_kernel");
}

void ContactSolver::enqueue_frame(cudaStream_t stream, const std::function<void()>& passes) {
  const int n = engine_.n_envs();
  const State s = engine_.state();
  const FrameStart q{x0_.data(), y0_.data(), z0_.data()};
  predict_kernel<<<blocks_for(n), kBlock, 0, stream>>>(n, engine_.params(), s, q, active_.data(),
                                                       loop_.data());
  SIMPROF_CUDA_CHECK_LAUNCH("predict_kernel");
  passes();
  finish_kernel<<<blocks_for(n), kBlock, 0, stream>>>(n, engine_.params(), s, q);
  SIMPROF_CUDA_CHECK_LAUNCH("finish_kernel");
  end_frame_kernel<<<1, 1, 0, stream>>>(loop_.data(), history_.data(), kHistory);
  SIMPROF_CUDA_CHECK_LAUNCH("end_frame_kernel");
}

void ContactSolver::enqueue_step(cudaStream_t stream, cuda::WhileLoop& loop,
                                 const TimerView* timers) {
  enqueue_frame(stream, [&] {
    loop.enqueue(stream, [&](cudaStream_t body, const cuda::LoopCondition& c) {
      enqueue_pass(body, c, timers);
    });
  });
}

void ContactSolver::enqueue_step_fixed(cudaStream_t stream, int passes, const TimerView* timers) {
  if (passes < 1)
    throw std::invalid_argument("ContactSolver::enqueue_step_fixed: passes = " +
                                std::to_string(passes) + " (expected >= 1)");
  const cuda::LoopCondition ignored{0, scratch_flag_.data(), 0};
  enqueue_frame(stream, [&] {
    for (int i = 0; i < passes; ++i) enqueue_pass(stream, ignored, timers);
  });
}

std::vector<int> ContactSolver::pass_history(cudaStream_t stream) const {
  SolverLoopState st{};
  loop_.copy_to_host(&st, 1, stream);
  std::vector<int> ring(kHistory);
  history_.copy_to_host(ring.data(), ring.size(), stream);
  SIMPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
  const long long frames = st.step;
  const long long first = frames > kHistory ? frames - kHistory : 0;
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(frames - first));
  for (long long f = first; f < frames; ++f) out.push_back(ring[f % kHistory]);
  return out;
}

const char* to_string(LoopMode m) {
  switch (m) {
    case LoopMode::kHostDriven:
      return "host-driven";
    case LoopMode::kFixed:
      return "fixed";
    case LoopMode::kWhileNode:
      return "while node";
  }
  return "?";
}

SolverRunner::SolverRunner(ContactSolver& solver, LoopMode mode, int n_envs)
    : solver_(solver), mode_(mode), n_envs_(n_envs) {}

void SolverRunner::frame(cudaStream_t stream, cuda::DeviceTimerBuffer* timers) {
  if (!cache_) cache_ = std::make_unique<cuda::GraphCache>(stream);
  if (cache_->stream() != stream)
    throw std::invalid_argument("SolverRunner::frame: a different stream than the first frame's");
  const TimerView view = timers ? timers->view() : TimerView{};
  const TimerView* v = timers ? &view : nullptr;
  if (mode_ == LoopMode::kHostDriven) {
    if (timers) timers->reset(stream);
    solver_.enqueue_step(stream, loop_, v);  // not capturing: the host decides after each pass
    return;
  }
  // Keyed by whether timers are on: their reset and their view are part of the graph.
  cache_->run({n_envs_, timers ? 1u : 0u}, [&](cudaStream_t s) {
    if (timers) timers->reset(s);
    if (mode_ == LoopMode::kFixed)
      solver_.enqueue_step_fixed(s, solver_.max_iterations(), v);
    else
      solver_.enqueue_step(s, loop_, v);
  });
}

}  // namespace simprof::engine
