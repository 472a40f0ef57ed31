# SPDX-License-Identifier: MIT
"""What needs the CUDA backend beyond the kernel trace: has_cuda() says whether this build has it;
NvtxRanges emits steps and stages as NVTX ranges (simprof.Unavailable without it)."""
from __future__ import annotations

from ._lib import Handle, lib, new
from .core import StepProfiler

__all__ = ["has_cuda", "NvtxRanges"]


def has_cuda() -> bool:
    """Whether this build has the CUDA backend (KernelTracer, NvtxRanges)."""
    return bool(lib.simprof_has_cuda())


class NvtxRanges(Handle):
    """Steps and stages as NVTX ranges (domain "simprof"), for Nsight Systems and ncu."""

    _free = lib.simprof_nvtx_free

    def __init__(self, prof: StepProfiler):
        super().__init__(new(lib.simprof_nvtx_new, prof._h))
        self._prof = prof
