# SPDX-License-Identifier: MIT
"""GraphKernelTimer: every node of a replayed graph on the GPU's clock, from stamped copies (the C++
simprof::cuda::GraphKernelTimer). Also simprof.cuda.GraphKernelTimer."""
from __future__ import annotations

import ctypes
from typing import Any, Dict, List, Optional

from ._lib import (KernelNodeC, KernelTimerCountersC, KernelTimerOptionsC, check, fields, lib, new,
                   options, size, text)
from .core import StepProfiler
from .cuda import _StampingTimer, stream_handle
from .errors import InvalidArgument

__all__ = ["GraphKernelTimer"]


class GraphKernelTimer(_StampingTimer):
    """Every node of a replayed graph on the GPU's clock, without CUPTI.

    On the steps whose index modulo sample_every is sample_offset (1 step in 128, index 8 mod 128,
    by default), a
    copy of the graph with a one-thread stamp kernel after every node (in the chain: the node's
    dependents wait for its stamp) is launched instead of the graph; every other step replays the
    graph as captured. A node's device time is its stamp minus its predecessors' latest stamp,
    less one stamp's own cost (hop_ns, measured in each stamped replay). The copy runs on the
    timer's stream (`stream`, given when it is made): replay there. Each kernel is named by its function and placed in the
    stage that was open when it was captured. For torch.cuda.CUDAGraph:

        g = torch.cuda.CUDAGraph(keep_graph=True)
        with prof.step(), kernels.capture(g):
            with prof.stage("physics"): ...
        for i in range(n):
            with prof.step():
                kernels.replay(g)             # the stamped copy when sampled, else g.replay()
        kernels.synchronize()
        print(kernels.kernel_table())

    It works while another tool (torch.profiler, Nsight Systems) holds CUPTI. With `trace` (a
    simprof.TraceSession), every step of its windows runs the stamped copies and each node is a
    device span in the window's trace (on the GPU's track, the stream's row, with Kineto's kernel
    fields and "stage"); where a KernelTracer traces the same window its CUPTI records are kept
    instead."""

    _free = lib.simprof_kernel_timer_free
    _capture_begin = lib.simprof_kernel_timer_capture_begin
    _capture_end = lib.simprof_kernel_timer_capture_end
    _stamp_fn = lib.simprof_kernel_timer_stamp

    def __init__(self, prof: StepProfiler, stream: Any = None, sample_every: int = 128,
                 sample_offset: int = -1, ring: Optional[int] = None,
                 max_stamps: Optional[int] = None, trace: Any = None):
        handle = stream_handle(stream)
        for name, value in (("ring", ring), ("max_stamps", max_stamps)):
            if value is not None and int(value) < 1:
                raise InvalidArgument("simprof: GraphKernelTimer %s = %r (expected >= 1, or None "
                                      "for the default)" % (name, value))
        o = options(KernelTimerOptionsC, lib.simprof_kernel_timer_options_init,
                    sample_every=sample_every, sample_offset=sample_offset, ring=ring,
                    max_stamps=max_stamps)
        super().__init__(new(lib.simprof_kernel_timer_new, prof._h, handle, ctypes.byref(o)),
                         prof, *(() if trace is None else (trace,)))
        self.stream, self._stream_obj = handle, stream
        if trace is not None:
            check(lib.simprof_kernel_timer_join(self._h, trace._h))

    def poll(self) -> None:
        """Reads the sampled replays whose stamps are in, without waiting."""
        check(lib.simprof_kernel_timer_poll(self._h))

    def synchronize(self) -> None:
        """Waits for the sampled replays in flight and reads them."""
        check(lib.simprof_kernel_timer_synchronize(self._h))

    def nodes(self) -> List[Dict[str, Any]]:
        """Every stamped node, copy by copy in node order: name, stage ("" when none), kernel
        (False for memsets, copies, ...), graph_id and node_id (CUPTI's), copy, index, count
        (sampled replays that timed it), mean_s, min_s, max_s."""
        n = size()
        check(lib.simprof_kernel_timer_nodes_count(self._h, ctypes.byref(n)))
        out = []
        node = KernelNodeC()
        for i in range(n.value):
            check(lib.simprof_kernel_timer_node(self._h, i, ctypes.byref(node)))
            d = fields(node)
            d["name"], d["stage"] = node.name.decode(), node.stage.decode()
            d["kernel"] = bool(node.kernel)
            out.append(d)
        return out

    def counters(self) -> Dict[str, float]:
        """replays (read), missed (sampled steps that ran no stamped copy), dropped (replays left
        out: a stamp that did not run, or the ring full), unstamped (graphs given no copy),
        hop_ns (what one stamp adds to a chain, taken off every reading)."""
        c = KernelTimerCountersC()
        check(lib.simprof_kernel_timer_counters_get(self._h, ctypes.byref(c)))
        return fields(c)

    def kernel_table(self, top: int = 10) -> str:
        """The kernels by stage: mean, min, max device microseconds per sampled replay, share."""
        if int(top) < 1:
            raise InvalidArgument("simprof: kernel_table(top=%r) (expected >= 1)" % (top,))
        return text(lib.simprof_kernel_table, self._h, int(top))
