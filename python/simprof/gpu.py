# SPDX-License-Identifier: MIT
"""GpuProfile: the whole GPU truth of a loop from one object (the C++ simprof::cuda::GpuProfile)."""
from __future__ import annotations

import ctypes
from typing import Any, Dict

from ._lib import (GpuProfileCountersC, GpuProfileOptionsC, check, dbl, fields, lib, new, options,
                   text)
from .core import StepProfiler
from .cuda import _StampingTimer, stream_handle

__all__ = ["GpuProfile"]


class GpuProfile(_StampingTimer):
    """The FPS line on the GPU's clock, device stage times, the per-kernel table of replayed
    graphs and, with `trace` (a simprof.TraceSession), every kernel of its windows through CUPTI:

        prof = simprof.StepProfiler(n_envs=4096)
        gpu = simprof.GpuProfile(prof)                 # paces the loop; FPS on the GPU clock
        g = torch.cuda.CUDAGraph(keep_graph=True)
        with prof.step(), gpu.capture(g):              # torch.cuda.graph(g), stamps noted
            with prof.stage("physics"): ...
        for i in range(n):
            with prof.step():
                gpu.replay(g)                          # a stamped copy when sampled
        gpu.finish()
        print(gpu.report())

    Eager work (torch ops, Warp launches, CuPy kernels) inside `prof.stage(...)` needs nothing
    more. The tools belong to the profiler: one GpuProfile per profiler. `stream`: the one the
    loop's steps run on (None: the framework's current stream)."""

    _free = lib.simprof_gpu_profile_free
    _capture_begin = lib.simprof_gpu_profile_capture_begin
    _capture_end = lib.simprof_gpu_profile_capture_end
    _stamp_fn = lib.simprof_gpu_profile_stamp

    def __init__(self, prof: StepProfiler, stream: Any = None, max_in_flight: int = 2,
                 stage_sample_every: int = 16, kernel_sample_every: int = 128,
                 fps_from_device: bool = True, trace: Any = None):
        handle = stream_handle(stream)
        o = options(GpuProfileOptionsC, lib.simprof_gpu_profile_options_init,
                    max_in_flight=max_in_flight, stage_sample_every=stage_sample_every,
                    kernel_sample_every=kernel_sample_every, fps_from_device=bool(fps_from_device))
        parents = (prof,) if trace is None else (prof, trace)
        super().__init__(new(lib.simprof_gpu_profile_new, prof._h, handle, ctypes.byref(o),
                             None if trace is None else trace._h), *parents)
        self.stream, self._stream_obj = handle, stream

    def finish(self) -> None:
        """Waits for the GPU and reads everything: call at the end of a run."""
        check(lib.simprof_gpu_profile_finish(self._h))

    def report(self) -> str:
        """The device stage table and the kernel table, with what each is over."""
        return text(lib.simprof_gpu_profile_report, self._h)

    def mean(self, stage: str) -> float:
        """Mean device seconds of `stage` ("step", "period" or a stage); NaN when not timed."""
        out = dbl()
        check(lib.simprof_gpu_profile_mean(self._h, stage.encode(), ctypes.byref(out)))
        return out.value

    def counters(self) -> Dict[str, int]:
        """steps, stages_joined, stages_dropped, stages_unstamped, kernel_replays,
        kernel_dropped."""
        c = GpuProfileCountersC()
        check(lib.simprof_gpu_profile_counters_get(self._h, ctypes.byref(c)))
        return {k: int(v) for k, v in fields(c).items()}
