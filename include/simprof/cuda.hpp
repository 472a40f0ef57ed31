// SPDX-License-Identifier: MIT
// Everything in simprof's CUDA backend, on top of the core (<simprof/simprof.hpp>). One concern a
// folder:
//   cuda/gpu_profile.hpp  GpuProfile: the whole GPU truth of a loop from one object
//   cuda/runtime/    owners of CUDA handles (streams, events, buffers) and checked errors
//   cuda/graphs/     the shape-keyed graph cache and StepGraph, capture diagnosis, device-side
//                    while loops, the two-stream frame pipeline, and how a measuring tool
//                    instruments a graph
//   cuda/timing/     the step pacer, device stage times, the stopwatch, per-env timer buffers
//                    and the device clock they read
//   cuda/trace/      the CUPTI kernel tracer and NVTX ranges
//   cuda/memory/     device allocations on the trace's memory counter
//   cuda/precision/  the device-side precision comparer
#pragma once

#include "simprof/cuda/gpu_profile.hpp"
#include "simprof/cuda/graphs/capture.hpp"
#include "simprof/cuda/graphs/foreign_graph.hpp"
#include "simprof/cuda/graphs/frame_pipeline.hpp"
#include "simprof/cuda/graphs/graph_cache.hpp"
#include "simprof/cuda/graphs/step_graph.hpp"
#include "simprof/cuda/graphs/while_loop.hpp"
#include "simprof/cuda/memory/device_allocations.hpp"
#include "simprof/cuda/precision/device_comparer.hpp"
#include "simprof/cuda/runtime/buffer.hpp"
#include "simprof/cuda/runtime/error.hpp"
#include "simprof/cuda/runtime/stream.hpp"
#include "simprof/cuda/timing/device_timer_buffer.hpp"
#include "simprof/cuda/timing/kernel_timer.hpp"
#include "simprof/cuda/timing/stage_timer.hpp"
#include "simprof/cuda/timing/step_pacer.hpp"
#include "simprof/cuda/timing/stopwatch.hpp"
#include "simprof/cuda/trace/kernel_tracer.hpp"
#include "simprof/cuda/trace/nvtx.hpp"
#include "simprof/simprof.hpp"
#if defined(__CUDACC__)
#include "simprof/cuda/timing/device_clock.cuh"
#endif
