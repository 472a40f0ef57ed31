// SPDX-License-Identifier: MIT
// What the public headers' usage examples take from the reader's program, beyond the docs'
// prelude: buffers, sizes, a trace, a graph cache and its step body. Declarations only: the
// examples are compiled (ctest label docs), never linked or run.
#pragma once

#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "prelude.hpp"

extern int n;
extern int row;
extern int frames;
extern std::int64_t begin_ns, end_ns;
extern simprof::ProfilingOptions options;
extern simprof::RankInfo ranks;
extern simprof::Trace trace;
extern simprof::TraceOptions topt;
extern simprof::TraceSession session;
extern simprof::TimerBuffer timers;
extern simprof::PrecisionChecker checker;
extern float e_ref, e_half;
extern std::vector<float> ref, var;
extern const float *ref_x, *var_x, *ref_y, *var_y;
extern float* buf;
extern simprof::StageId physics;  // scopes.hpp's example: a stage id looked up once
void all_reduce(float* buf, int n);

// macros.hpp's example: an engine holding a profiler pointer.
struct DocSolver {
  void run();
};
struct Engine {
  void step();
  simprof::StepProfiler* prof_;
  DocSolver solver_;
  DocSensor imu_;
};

#if defined(SIMPROF_DOC_CUDA_BACKEND)
extern simprof::cuda::GraphCache cache;
extern std::function<void(cudaStream_t)> body;
extern std::vector<float> host;
extern float* snapshot[2];
extern float *dst, *src;
extern float *x, *residual;
extern float tol;
extern int blocks;
void publish_positions(cudaStream_t s, float* to);
void render_from(cudaStream_t s, const float* from);
std::shared_ptr<simprof::cuda::GraphInstrumentation> make_my_stamps();
extern simprof::cuda::DeviceStageTimer timer;  // foreign_graph.hpp: a graph another framework
extern cudaStream_t capture_stream;            // captured on a stream of its own
extern cudaGraph_t graph;
void framework_replay();
#endif
#if defined(__CUDACC__)
__global__ void my_kernel();
__global__ void step(float* positions);
__global__ void iterate_kernel(float* x, float* residual);
__global__ void check_kernel(const float* residual, float tol, simprof::cuda::LoopCondition c);
enum DocSolverTimer : int { kLineSearch, kUpdateGradient };
__device__ inline void line_search(int) {}  // device code is not linked: defined here
__device__ inline void update_gradient(int) {}
#endif
