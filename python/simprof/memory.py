# SPDX-License-Identifier: MIT
"""MemoryTracker: device allocations per step and per stage — every CUDA allocation call of the
process (torch's caching allocator growing, Warp's and CuPy's pools, cudaMalloc in a library),
counted through CUPTI — device memory in use and its peak, and one warning for a step that
allocates after the warm-up (such a step cannot be captured into a CUDA graph as it is)."""
from __future__ import annotations

import ctypes
from typing import Dict, Optional

from ._lib import AllocCountsC, Handle, MemoryStateC, check, fields, lib, new
from .core import StepProfiler
from .trace import TraceSession
from .errors import InvalidArgument

__all__ = ["MemoryTracker"]


class MemoryTracker(Handle):
    """Device allocations per step and stage of `prof`'s steps.

        mem = simprof.MemoryTracker(prof, trace=session)   # trace: counter tracks in its windows
        ... the loop ...
        mem.total("physics")       # {'allocs': 3, 'alloc_bytes': 2097152, 'frees': 0, ...}
        mem.first_steady_allocation  # the first step after warmup_steps that allocated, or None

    A stage's counts are what was allocated between its begin and its end, its children's
    included. Counting needs CUPTI's callbacks: when another tool holds CUPTI (Nsight,
    compute-sanitizer, torch.profiler once it ran) nothing is counted, `enabled` is False and
    `reason` says why. Host (Python or C++) heap allocations are not counted from Python. Needs
    the CUDA backend (simprof.Unavailable otherwise)."""

    _free = lib.simprof_memory_tracker_free

    def __init__(self, prof: StepProfiler, trace: Optional[TraceSession] = None,
                 warmup_steps: int = 10):
        if int(warmup_steps) < 0:
            raise InvalidArgument("simprof: MemoryTracker warmup_steps = %d (expected >= 0)"
                                  % warmup_steps)
        parents = (prof,) if trace is None else (prof, trace)
        super().__init__(new(lib.simprof_memory_tracker_new, prof._h,
                             None if trace is None else trace._h, int(warmup_steps)), *parents)

    @property
    def enabled(self) -> bool:
        """Whether allocations are counted (CUPTI's callbacks could be had)."""
        return bool(lib.simprof_memory_tracker_enabled(self._h))

    @property
    def reason(self) -> str:
        """Why counting is off ("" when enabled)."""
        return lib.simprof_memory_tracker_reason(self._h).decode()

    def total(self, stage: str = "step") -> Dict[str, int]:
        """What `stage` ("step": whole steps) allocated on the device over the completed steps it
        ran in: allocs, alloc_bytes, frees, free_bytes, and steps (how many)."""
        c = AllocCountsC()
        check(lib.simprof_memory_tracker_total(self._h, str(stage).encode(), ctypes.byref(c)))
        return fields(c)

    def allocs_per_step(self, stage: str = "step") -> float:
        """Device allocations per step `stage` ran in (0 when it never ran)."""
        t = self.total(stage)
        return t["allocs"] / t["steps"] if t["steps"] else 0.0

    def bytes_per_step(self, stage: str = "step") -> float:
        """Device bytes allocated per step `stage` ran in (0 when it never ran)."""
        t = self.total(stage)
        return t["alloc_bytes"] / t["steps"] if t["steps"] else 0.0

    def _state(self) -> MemoryStateC:
        s = MemoryStateC()
        check(lib.simprof_memory_tracker_state(self._h, ctypes.byref(s)))
        return s

    @property
    def in_use_bytes(self) -> int:
        """Device bytes allocated since counting began and not freed, at the last step end."""
        return int(self._state().in_use_bytes)

    @property
    def peak_bytes(self) -> int:
        """The most device bytes in use seen."""
        return int(self._state().peak_bytes)

    @property
    def steady_allocating_steps(self) -> int:
        """Completed steps after the warm-up that allocated on the device."""
        return int(self._state().steady_allocating_steps)

    @property
    def first_steady_allocation(self) -> Optional[Dict[str, object]]:
        """The first of those steps: step, stage (the innermost that allocated; "" outside any),
        allocs, bytes; None when there was none."""
        s = self._state()
        if s.steady_allocating_steps == 0:
            return None
        return {"step": s.first_step, "stage": s.first_stage.decode(), "allocs": s.first_allocs,
                "bytes": s.first_bytes}
