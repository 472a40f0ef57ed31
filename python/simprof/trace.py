# SPDX-License-Identifier: MIT
"""Traces: TraceSession writes the steps a torch.profiler-style schedule selects as Perfetto /
Holistic Trace Analysis JSON; KernelTracer adds every kernel, copy and launch of the process through
CUPTI (a CUDA build; else simprof.Unavailable)."""
from __future__ import annotations

import ctypes
from typing import List

from ._lib import Handle, TraceOptionsC, check, cstr, lib, new, options, size
from .core import StepProfiler

__all__ = ["TraceSession", "KernelTracer"]


class TraceSession(Handle):
    """Traces the steps a torch.profiler-style schedule selects to dir/<prefix>_<w>/rank<R>.json
    (Perfetto and Holistic Trace Analysis read them).

    TraceSession(prof, wait=0, warmup=0, active=1, repeat=1, skip_first=0, dir=".",
                 background=False)

    background=True hands each window over beside the loop: at the window's last step the loop
    only stops the kernel tracer; waiting for the window's kernels, converting and writing run on
    a thread of the session's own (no GIL held) while the loop goes on. windows and files grow once
    a window is written; wait() waits for it, and so do close() and the next window's start."""

    _free = lib.simprof_trace_free

    def __init__(self, prof: StepProfiler, wait: int = 0, warmup: int = 0, active: int = 1,
                 repeat: int = 1, skip_first: int = 0, dir: str = ".", background: bool = False):
        o = options(TraceOptionsC, lib.simprof_trace_options_init, wait=wait, warmup=warmup,
                    active=active, repeat=repeat, skip_first=skip_first,
                    flags=1 if background else 0)
        o.dir = dir.encode()
        super().__init__(new(lib.simprof_trace_new, prof._h, ctypes.byref(o)), prof)

    def wait(self) -> None:
        """Returns once every window ended so far is written."""
        check(lib.simprof_trace_wait(self._h))

    @property
    def windows(self) -> int:
        """Trace windows written so far."""
        return int(lib.simprof_trace_windows(self._h))

    @property
    def dropped(self) -> int:
        """Spans dropped over a window's limits: counted, never silent."""
        return int(lib.simprof_trace_dropped(self._h))

    @property
    def files(self) -> List[str]:
        """The trace files written so far, one per window."""
        n = size()
        check(lib.simprof_trace_files_count(self._h, ctypes.byref(n)))
        out, path = [], cstr()
        for i in range(n.value):
            check(lib.simprof_trace_file(self._h, i, ctypes.byref(path)))
            out.append(path.value.decode())
        return out


class KernelTracer(Handle):
    """Every kernel, copy and launch of the process (torch, Warp, CuPy) in the session's windows,
    through CUPTI, next to the CPU stages. graph_launches=True writes one span per graph launch;
    kernels_only=True records kernels alone (the cheapest trace); cupti_clock=True keeps CUPTI's
    own timestamps, offset to the profiler's clock once per window (no per-record callback);
    runtime, driver, copies, syncs=False each leave one kind of record out; overhead=True adds
    CUPTI's own overhead records (costly: +10 points on a replayed 100-kernel graph). Disabled
    (enabled is False, reason says why) when another tool holds CUPTI."""

    _free = lib.simprof_kernel_tracer_free

    def __init__(self, prof: StepProfiler, trace: TraceSession, graph_launches: bool = False,
                 kernels_only: bool = False, cupti_clock: bool = False, runtime: bool = True,
                 driver: bool = True, copies: bool = True, syncs: bool = True,
                 overhead: bool = False):
        flags = ((1 if graph_launches else 0) | (2 if kernels_only else 0) |
                 (4 if cupti_clock else 0) | (0 if runtime else 8) | (0 if driver else 16) |
                 (0 if copies else 32) | (0 if syncs else 64) | (128 if overhead else 0))
        super().__init__(new(lib.simprof_kernel_tracer_new, prof._h, trace._h, flags), prof, trace)

    @property
    def enabled(self) -> bool:
        """Whether CUPTI could be had (False: another tool holds it; reason says which)."""
        return bool(lib.simprof_kernel_tracer_enabled(self._h))

    @property
    def reason(self) -> str:
        """Why the tracer is off ("" when enabled)."""
        return lib.simprof_kernel_tracer_reason(self._h).decode()

    @property
    def dropped(self) -> int:
        """CUPTI records lost (CUPTI's buffers full): counted, never silent."""
        return int(lib.simprof_kernel_tracer_dropped(self._h))
