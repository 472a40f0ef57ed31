# SPDX-License-Identifier: MIT
"""What the package's tests share: a profiler that prints no FPS line, whether a GPU is visible to
simprof, and torch on it (or the test skips, saying why)."""
import pytest

import simprof
from simprof._lib import lib


def quiet(**kw):
    return simprof.StepProfiler(show_fps=False, **kw)


def gpu_visible() -> bool:
    """The CUDA backend is built and CUDA answers for the default stream."""
    return simprof.has_cuda() and lib.simprof_stream_check(None, None) == 0


GPU = gpu_visible()


def torch_on_gpu():
    if not GPU:
        pytest.skip("no GPU visible to simprof (or built without the CUDA backend)")
    torch = pytest.importorskip("torch", reason="torch launches the kernels")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch


def warm_for_capture(torch, x):
    """torch's warm-up before a capture: x's kernels run once on a side stream."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        x.mul_(1.0001).add_(1.0)
    torch.cuda.current_stream().wait_stream(side)
