// SPDX-License-Identifier: MIT
// Everything in simprof's CUDA backend, on top of the core (<simprof/simprof.hpp>). The rooms:
//   cuda/          measuring tools: device stage times, per-env timer buffers, the CUPTI kernel
//                  tracer, NVTX ranges, the device-side precision comparer; and the owners of CUDA
//                  handles they are built from (streams, events, buffers), with checked errors
//   cuda/graphs/   execution helpers: the shape-keyed graph cache and StepGraph, capture
//                  diagnosis, device-side while loops, the two-stream frame pipeline
#pragma once

#include "simprof/cuda/buffer.hpp"
#include "simprof/cuda/device_allocations.hpp"
#include "simprof/cuda/error.hpp"
#include "simprof/cuda/graphs/capture.hpp"
#include "simprof/cuda/graphs/frame_pipeline.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/graphs/step_graph.hpp"
#include "simprof/cuda/graphs/while_loop.hpp"
#include "simprof/cuda/kernel_tracer.hpp"
#include "simprof/cuda/nvtx.hpp"
#include "simprof/cuda/precision.hpp"
#include "simprof/cuda/stage_timer.hpp"
#include "simprof/cuda/step_pacer.hpp"
#include "simprof/cuda/stopwatch.hpp"
#include "simprof/cuda/stream.hpp"
#include "simprof/cuda/timer_buffer.hpp"
#include "simprof/simprof.hpp"
#if defined(__CUDACC__)
#include "simprof/cuda/device_clock.cuh"
#endif
