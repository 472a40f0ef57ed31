# SPDX-License-Identifier: MIT
"""simprof from Python: Genesis-style step timings, the FPS line, trace sessions and a CUPTI kernel
trace of whatever CUDA work the process does (torch, Warp, CuPy), over simprof's C API (ctypes).

    import simprof
    prof = simprof.StepProfiler(n_envs=1024, show_fps=True)
    for i in range(1000):
        with prof.step():
            with prof.stage("physics"):
                ...
    print(prof.timings)            # {'physics': 0.0012, 'step': 0.0013, 'period': 0.0013}

Errors from simprof (alpha 1.5, a stage outside a step, an unknown stage) raise simprof.Error
subclasses (also ValueError or RuntimeError) carrying simprof's message.

On a GPU, simprof.cuda gives the GPU's own numbers: StepPacer (the FPS line on the GPU clock),
DeviceStageTimer (stage times on the device, torch.cuda.CUDAGraph replays included),
GraphKernelTimer (every kernel of a replayed graph, without CUPTI), Stopwatch.

Every public name is here; the modules behind them: core (StepProfiler, ManualClock, RunningMean,
version), timers (TimerStats), trace (TraceSession, KernelTracer), memory (MemoryTracker),
distributed (collective, ProcessGroup), cuda (has_cuda, stream_handle, StepPacer,
DeviceStageTimer, StampedGraph, NvtxRanges), kernel_timer (GraphKernelTimer), stopwatch
(Stopwatch), gpu (GpuProfile), errors (Error and its subclasses), and
_lib (loading libsimprof_c.so, the C prototypes; private).
"""
from .errors import CudaError, Error, InvalidArgument, LogicError, Unavailable
from .core import ManualClock, RunningMean, StepProfiler, version
from .timers import TimerStats
from .trace import KernelTracer, TraceSession
from .memory import MemoryTracker
from .distributed import ProcessGroup, collective
from . import cuda, gpu, kernel_timer, stopwatch
from .cuda import (DeviceStageTimer, NvtxRanges, StampedGraph, StepPacer,
                   Stopwatch, has_cuda, stream_handle)
from .gpu import GpuProfile
from .kernel_timer import GraphKernelTimer

__all__ = [
    "Error", "InvalidArgument", "LogicError", "CudaError", "Unavailable",
    "StepProfiler", "ManualClock", "RunningMean", "TimerStats", "TraceSession", "KernelTracer",
    "MemoryTracker", "ProcessGroup", "collective",
    "GpuProfile", "NvtxRanges", "StepPacer", "DeviceStageTimer", "GraphKernelTimer", "StampedGraph", "Stopwatch",
    "stream_handle",
    "has_cuda", "version",
]
