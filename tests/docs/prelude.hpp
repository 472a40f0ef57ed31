// SPDX-License-Identifier: MIT
// What the docs' snippets take from the reader's program: an engine, a profiler, a stream, sizes.
// Declarations only: the snippets are compiled (ctest label docs), never linked or run.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

#include <simprof/simprof.hpp>
#if defined(SIMPROF_DOC_CUDA_BACKEND)
#include <simprof/cuda.hpp>
#endif

struct DocEngine {
  void physics();
  void step();
  void step(simprof::TimerView timers);  // an engine whose loops time blocks
#if defined(SIMPROF_DOC_CUDA_BACKEND)
  void enqueue_step(cudaStream_t stream);
#endif
};
struct DocSensor {
  void update();
};
struct DocViewer {
  void draw();
};

extern DocEngine engine;
extern DocSensor imu;
extern DocViewer viewer;
extern simprof::StepProfiler prof;
extern int n_envs;
extern int substeps;
void solve_contacts();

enum DocTimer : int { kSolve, kForces, kContacts, kIntegrate };
extern simprof::TimerStats stats;
extern simprof::TimerFrame frame;

#if defined(SIMPROF_DOC_CUDA_BACKEND)
extern simprof::cuda::Stream stream;
void validate(cudaStream_t stream);  // a check that reduces on the GPU and reads back
#endif
#if defined(__CUDACC__)
extern dim3 grid, block;
__global__ void solver(int n_envs, simprof::TimerView timers);
#endif
