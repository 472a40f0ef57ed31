# SPDX-License-Identifier: MIT
"""The GPU's own numbers from Python: StepPacer (the FPS line and step times on the GPU clock),
DeviceStageTimer (stage times on the device, eager work and replayed graphs, torch.cuda.CUDAGraph
included), Stopwatch (sections of GPU work), NvtxRanges, and the stream handling they share.

Every call that takes a stream accepts what Python users hold (stream_handle()): None (the current
stream of the framework in use — torch, then Warp, then CuPy — else the legacy default stream), an
int handle, an object with `cuda_stream` (torch and Warp streams), CuPy's `.ptr`, or the CUDA
stream protocol (`__cuda_stream__`). Anything else, or a stream of another device, raises
simprof.InvalidArgument naming it. A stream object given is held as long as the handle using it,
so it cannot be destroyed under it; CUDA cannot be asked whether a bare int handle was destroyed
(it reads the freed stream and crashes), so keep such a stream alive yourself. Without the CUDA backend (has_cuda() is False)
every class here raises simprof.Unavailable.
"""
from __future__ import annotations

import contextlib
import ctypes
import sys
from typing import Any, Dict, Iterator, Optional

from ._lib import (DeviceStepsC, Handle, PacerCounters, StageTimerOptionsC, StepPacerOptionsC,
                   check, cint, cstr, dbl, fields, lib, new, options, size, text)
from .core import StepProfiler
from .errors import InvalidArgument

__all__ = ["has_cuda", "stream_handle", "NvtxRanges", "StepPacer", "DeviceStageTimer",
           "GraphKernelTimer", "StampedGraph", "Stopwatch"]

_MAX_HANDLE = 1 << 64


def has_cuda() -> bool:
    """Whether this build has the CUDA backend (everything in simprof.cuda, KernelTracer,
    MemoryTracker)."""
    return bool(lib.simprof_has_cuda())


def _current_stream() -> int:
    # The framework in use is one already imported: importing one here would cost seconds and
    # make a CUDA context the caller did not ask for.
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return int(torch.cuda.current_stream().cuda_stream)
    warp = sys.modules.get("warp")
    if warp is not None and hasattr(warp, "get_stream"):
        with contextlib.suppress(Exception):  # no CUDA device in Warp: none of its streams
            return int(warp.get_stream().cuda_stream)
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        return int(cupy.cuda.get_current_stream().ptr)
    return 0


def _as_handle(value: Any, got: Any, how: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument("simprof: stream %r gave %s = %r (expected an int handle)"
                              % (got, how, value))
    if not 0 <= value < _MAX_HANDLE:
        raise InvalidArgument("simprof: stream handle %d (expected 0 <= handle < 2**64)" % value)
    return value


def stream_handle(stream: Any = None) -> int:
    """The cudaStream_t of `stream` as an int: None (the current stream of torch, Warp or CuPy,
    whichever is imported, else 0: the legacy default stream), an int, an object with
    `__cuda_stream__()` (the CUDA stream protocol), `.cuda_stream` (torch, Warp) or `.ptr`
    (CuPy). Raises InvalidArgument naming anything else. Whether CUDA knows the handle is checked
    where the stream is used."""
    if stream is None:
        return _current_stream()
    if isinstance(stream, int) and not isinstance(stream, bool):
        return _as_handle(stream, stream, "its value")
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        pair = protocol() if callable(protocol) else protocol
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise InvalidArgument("simprof: stream %r: __cuda_stream__ gave %r (expected a "
                                  "(version, handle) pair)" % (stream, pair))
        return _as_handle(pair[1], stream, "__cuda_stream__()[1]")
    for attr in ("cuda_stream", "ptr"):
        if hasattr(stream, attr):
            return _as_handle(getattr(stream, attr), stream, "." + attr)
    raise InvalidArgument(
        "simprof: stream = %r of type %s (expected None, an int handle, a torch or Warp stream "
        "(.cuda_stream), a CuPy stream (.ptr) or an object with __cuda_stream__)"
        % (stream, type(stream).__name__))


class NvtxRanges(Handle):
    """Steps and stages as NVTX ranges (domain "simprof"), for Nsight Systems and ncu."""

    _free = lib.simprof_nvtx_free

    def __init__(self, prof: StepProfiler):
        super().__init__(new(lib.simprof_nvtx_new, prof._h), prof)


class StepPacer(Handle):
    """At most `max_in_flight` steps queued on the GPU, and every step's time on the GPU.

    A GPU loop only enqueues: without a bound, the host runs hundreds of steps ahead and the FPS
    line says how fast the host enqueues. Attached to `prof`, the pacer records a CUDA event on
    `stream` at every step's end and, when a step begins, waits until the step max_in_flight
    before it has ended on the GPU. The FPS line then reads the GPU's step-end times ("GPU clock"
    in the line; fps_from_device=False keeps the host's). mark_every: a timed end event on the
    steps whose index is a multiple of mark_every and on the spanned ones, an untimed one after
    the others (a timed event costs the GPU a little between two steps, docs/gpu-truth.md; an
    untimed one nothing; the steps between two timed events share their period; 8 by default, 1
    for every step's own period); span_every: a start event (the step's span on the GPU) every
    span_every steps (0: none). Call finish() at the end of a run, before reading results."""

    _free = lib.simprof_step_pacer_free

    def __init__(self, prof: StepProfiler, stream: Any = None, max_in_flight: int = 2,
                 mark_every: int = 8, span_every: int = 8, fps_from_device: bool = True):
        handle = stream_handle(stream)
        o = options(StepPacerOptionsC, lib.simprof_step_pacer_options_init,
                    max_in_flight=max_in_flight, mark_every=mark_every, span_every=span_every,
                    fps_from_device=bool(fps_from_device))
        super().__init__(new(lib.simprof_step_pacer_new, prof._h, handle, ctypes.byref(o)), prof)
        self.stream, self._stream_obj = handle, stream

    def finish(self) -> None:
        """Waits for every step recorded, takes in their device times and completes the FPS
        sample in progress."""
        check(lib.simprof_step_pacer_finish(self._h))

    def counters(self) -> Dict[str, float]:
        """steps (recorded), waits (steps whose start waited for the GPU), wait_s (host seconds
        spent waiting), most_in_flight."""
        c = PacerCounters()
        check(lib.simprof_step_pacer_counters(self._h, ctypes.byref(c)))
        return fields(c)

    def device_steps(self) -> Dict[str, float]:
        """The steps' device times taken in so far: steps, completed, missed (steps that left no
        device time), periods; mean_step_s (span), mean_period_s (end to end), seconds on the
        GPU's clock (NaN when none)."""
        d = DeviceStepsC()
        check(lib.simprof_step_pacer_device_steps(self._h, ctypes.byref(d)))
        return fields(d)

    @property
    def mean_period_s(self) -> float:
        """Seconds per step on the GPU (from one step's end to the next's)."""
        return self.device_steps()["mean_period_s"]


class StampedGraph(Handle):
    """A timer's stamped copy of a graph another framework captured (DeviceStageTimer's stamps at
    the stage boundaries, GraphKernelTimer's after every node): launch() runs it on the steps the
    timer samples and returns True; on the others it returns False and the caller replays its own
    graph. Made by the timer's capture() (torch) or stamp() (any framework)."""

    _free = lib.simprof_stamped_graph_free

    def __init__(self, timer: "_StampingTimer", graph_handle: int, keep: Any = None):
        super().__init__(new(timer._stamp_fn, timer._h, int(graph_handle)), timer)
        self._keep = keep  # the framework's graph: its memory is the copy's memory
        self._launched = cint()

    def launch(self, stream: Any) -> bool:
        """Launches the stamped copy on `stream` when this step is sampled; False otherwise."""
        check(lib.simprof_stamped_graph_launch(self._h, stream, ctypes.byref(self._launched)))
        return bool(self._launched.value)

    @property
    def instrumented(self) -> bool:
        """False when the capture had no stage in it (there is nothing to stamp)."""
        return bool(lib.simprof_stamped_graph_instrumented(self._h))

    @property
    def launches(self) -> int:
        """Launches of the stamped copy so far (the sampled steps)."""
        return int(lib.simprof_stamped_graph_launches(self._h))


class _StampingTimer(Handle):
    """What DeviceStageTimer and GraphKernelTimer share: a graph another framework captures,
    noted while it is captured and given the timer's stamped copy (StampedGraph)."""

    _capture_begin: Any
    _capture_end: Any
    _stamp_fn: Any
    stream: int

    @contextlib.contextmanager
    def capturing(self, stream: Any = None) -> Iterator[None]:
        """Inside a framework's capture (Warp's ScopedCapture, CuPy's stream.begin_capture()):
        the stage boundaries until the block ends are noted for a stamped copy; then stamp() the
        captured graph. `stream`: the stream being captured (None: the framework's current)."""
        check(type(self)._capture_begin(self._h, stream_handle(stream)))
        try:
            yield
        finally:
            check(type(self)._capture_end(self._h))

    def stamp(self, graph_handle: int, keep: Any = None) -> StampedGraph:
        """The stamped copy of a captured cudaGraph_t (an int; not changed, not owned), made
        right after a capturing() block. `keep`: an object to keep alive as long as the copy
        (the framework's graph, whose memory the copy uses)."""
        return StampedGraph(self, graph_handle, keep)

    def _attr(self) -> str:
        return "_simprof_stamped_" + type(self).__name__

    @contextlib.contextmanager
    def capture(self, graph: Any, **graph_kwargs: Any) -> Iterator[Any]:
        """`with torch.cuda.graph(graph, **graph_kwargs):` with the stages inside noted; on exit
        the graph (made with torch.cuda.CUDAGraph(keep_graph=True)) gets a stamped copy that
        replay() launches on sampled steps. Open it inside a step (stages need one)."""
        import torch
        who = type(self).__name__
        if not getattr(graph, "raw_cuda_graph", None):
            raise InvalidArgument("simprof: %s.capture(%r): expected a torch.cuda.CUDAGraph of "
                                  "torch >= 2.7 (raw_cuda_graph())" % (who, graph))
        with torch.cuda.graph(graph, **graph_kwargs):
            with self.capturing(torch.cuda.current_stream()):
                yield graph
        try:
            raw = graph.raw_cuda_graph()
        except RuntimeError as e:
            raise InvalidArgument("simprof: %s.capture: torch kept no graph (%s): make it with "
                                  "torch.cuda.CUDAGraph(keep_graph=True)" % (who, e)) from e
        old = getattr(graph, self._attr(), None)
        if old is not None:
            old.close()
        setattr(graph, self._attr(), self.stamp(raw, keep=graph))

    def replay(self, graph: Any) -> bool:
        """One step of a graph capture() stamped: its stamped copy on the timer's stream when
        the step is sampled (True), else graph.replay() (False) on the caller's current stream,
        which must be the timer's."""
        stamped = getattr(graph, self._attr(), None)
        if stamped is None or stamped._parents[0] is not self:
            raise InvalidArgument("simprof: %s.replay(%r): the graph was not captured with this "
                                  "timer's capture()" % (type(self).__name__, graph))
        if stamped.launch(self.stream):
            return True
        graph.replay()
        return False


class DeviceStageTimer(_StampingTimer):
    """Stage times on the GPU's clock for the stages a loop opens with `with prof.stage(...)`.

    On one step in `sample_every`, every stage boundary is stamped with the GPU's global timer:
    eager work (torch ops, Warp launches, CuPy kernels on `stream`) gets a one-thread stamp
    kernel on the stream; a graph gets stamps inside a copy of it, launched on sampled steps
    only, so every other step replays the graph exactly as captured. For torch.cuda.CUDAGraph:

        g = torch.cuda.CUDAGraph(keep_graph=True)
        with prof.step(), timer.capture(g):       # torch.cuda.graph(g) with the stamps noted
            with prof.stage("physics"): ...
        for i in range(n):
            with prof.step():
                timer.replay(g)                   # the stamped copy when sampled, else g.replay()

    It paces the loop too (a StepPacer, unless max_in_flight is 0), so "step" and "period" are the
    GPU's and the FPS line reads the GPU clock. Read results after synchronize(). An eager boundary
    within `merge_within_ns` of the previous stamp shares it (0: off)."""

    _free = lib.simprof_stage_timer_free
    _capture_begin = lib.simprof_stage_timer_capture_begin
    _capture_end = lib.simprof_stage_timer_capture_end
    _stamp_fn = lib.simprof_stamped_graph_new

    def __init__(self, prof: StepProfiler, stream: Any = None, sample_every: int = 16,
                 max_in_flight: int = 2, ring: Optional[int] = None,
                 fps_from_device: bool = True, merge_within_ns: int = 0):
        handle = stream_handle(stream)
        if ring is not None and int(ring) < 1:
            raise InvalidArgument("simprof: DeviceStageTimer ring = %r (expected >= "
                                  "max_in_flight + 4 and <= 2**20, rounded up to a power of "
                                  "two; or None for 64)" % (ring,))
        o = options(StageTimerOptionsC, lib.simprof_stage_timer_options_init,
                    sample_every=sample_every, max_in_flight=max_in_flight, ring=ring,
                    fps_from_device=bool(fps_from_device), merge_within_ns=merge_within_ns)
        super().__init__(new(lib.simprof_stage_timer_new, prof._h, handle, ctypes.byref(o)), prof)
        self._prof = prof
        self.stream, self._stream_obj = handle, stream

    def set_stream(self, stream: Any) -> None:
        """The stream the steps run on from now on."""
        handle = stream_handle(stream)
        check(lib.simprof_stage_timer_set_stream(self._h, handle))
        self.stream, self._stream_obj = handle, stream

    def poll(self) -> None:
        """Joins the sampled steps whose readings are in, without waiting."""
        check(lib.simprof_stage_timer_poll(self._h))

    def synchronize(self) -> None:
        """Waits for the GPU, joins every sampled step and completes the FPS sample."""
        check(lib.simprof_stage_timer_synchronize(self._h))

    @property
    def device_timings(self) -> Dict[str, float]:
        """Device seconds per stage of the latest sampled step joined, with "step" (its span on
        the GPU) and "period" (since the step before ended: paced, the mean over the pacer's
        group of steps that ends at it); {} until one is joined."""
        n = size()
        check(lib.simprof_stage_timer_timings_count(self._h, ctypes.byref(n)))
        out, name, value = {}, cstr(), dbl()
        for i in range(n.value):
            check(lib.simprof_stage_timer_timings_get(self._h, i, ctypes.byref(name),
                                                      ctypes.byref(value)))
            out[name.value.decode()] = value.value
        return out

    def _mean(self, stage: str, sampled: int) -> float:
        v = dbl()
        check(lib.simprof_stage_timer_mean(self._h, str(stage).encode(), sampled,
                                           ctypes.byref(v)))
        return v.value

    def mean(self, stage: str) -> float:
        """Mean device seconds of `stage` over the sampled steps that ran it; "step" and "period"
        over the unsampled steps when pacing (the loop as it runs without the timer; a period
        shared with a sampled step is left out). NaN when none did."""
        return self._mean(stage, 0)

    def sampled_mean(self, stage: str) -> float:
        """Mean device seconds over the sampled (stamped) steps, "step" and "period" included."""
        return self._mean(stage, 1)

    def device_stage_table(self) -> str:
        """Stage, host mean (needs stats_window on the profiler), device mean, the median of
        the latest device samples, device share."""
        return text(lib.simprof_device_stage_table, self._prof._h, self._h)

    @property
    def joined(self) -> int:
        """Sampled steps whose device readings were joined to the host's step."""
        return int(lib.simprof_stage_timer_joined(self._h))

    @property
    def dropped(self) -> int:
        """Sampled steps whose readings were lost (counted, never silent)."""
        return int(lib.simprof_stage_timer_dropped(self._h))

    @property
    def unpaired(self) -> int:
        """Stage readings left out because their stamps ran out of order."""
        return int(lib.simprof_stage_timer_unpaired(self._h))

    @property
    def unstamped(self) -> int:
        """Sampled steps that replayed a graph without this timer's stamps (a graph not made
        with its capture()): in no mean, said once. simprof.GpuProfile never has any."""
        return int(lib.simprof_stage_timer_unstamped(self._h))

# simprof.cuda.Stopwatch and simprof.cuda.GraphKernelTimer, defined beside (their modules import
# this one's names, all bound by now).
from .stopwatch import Stopwatch  # noqa: E402
from .kernel_timer import GraphKernelTimer  # noqa: E402
