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
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import os
from typing import Callable, Dict, List, Optional

__all__ = [
    "Error", "InvalidArgument", "LogicError", "CudaError", "Unavailable",
    "StepProfiler", "ManualClock", "RunningMean", "TimerStats", "TraceSession", "KernelTracer",
    "NvtxRanges",
    "has_cuda", "version",
]


class Error(Exception):
    """A failure inside simprof; the message is simprof's own."""


class InvalidArgument(Error, ValueError):
    """A value out of range, an unknown stage name, ..."""


class LogicError(Error, RuntimeError):
    """A call out of order: a stage outside a step, unbalanced stages."""


class CudaError(Error, RuntimeError):
    """A CUDA, CUPTI or NVTX call failed."""


class Unavailable(Error, RuntimeError):
    """This build of simprof has no CUDA backend."""


_ERRORS = {1: InvalidArgument, 2: LogicError, 3: CudaError, 4: Unavailable, 5: Error}


def _load() -> ctypes.CDLL:
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("SIMPROF_LIBRARY", ""), os.path.join(here, "libsimprof_c.so")]
    tried = []
    for path in candidates:
        if path and os.path.exists(path):
            return ctypes.CDLL(path)
        if path:
            tried.append(path)
    raise ImportError("simprof: libsimprof_c.so not found (tried %s; set SIMPROF_LIBRARY, or build "
                      "simprof and put <build>/python on PYTHONPATH)" % ", ".join(tried))


_lib = _load()
_vp = ctypes.c_void_p
_i64 = ctypes.c_int64
_u64 = ctypes.c_uint64
_FPS_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_double, ctypes.c_double, ctypes.c_int64, _vp)


def _sig(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_int = ctypes.c_int
_dbl = ctypes.c_double
_size = ctypes.c_size_t
_str = ctypes.c_char_p
_last_error = _sig("simprof_last_error", _str)
_sig("simprof_version", _str)
_sig("simprof_has_cuda", _int)
for _n, _a in [
    ("simprof_options_new", [ctypes.POINTER(_vp)]),
    ("simprof_options_set_show_fps", [_vp, _int]),
    ("simprof_options_set_alpha", [_vp, _dbl]),
    ("simprof_options_set_interval_ms", [_vp, _dbl]),
    ("simprof_options_set_timings_window", [_vp, _u64]),
    ("simprof_options_set_stats_window", [_vp, _u64]),
    ("simprof_profiler_new", [_vp, _i64, ctypes.POINTER(_vp)]),
    ("simprof_profiler_new_with_clock", [_vp, _i64, _vp, ctypes.POINTER(_vp)]),
    ("simprof_manual_clock_new", [ctypes.POINTER(_vp)]),
    ("simprof_manual_clock_advance_ns", [_vp, _i64]),
    ("simprof_manual_clock_now_ns", [_vp, ctypes.POINTER(_i64)]),
    ("simprof_step_begin", [_vp]),
    ("simprof_step_end", [_vp, ctypes.POINTER(_int)]),
    ("simprof_step_veto", [_vp]),
    ("simprof_stage_begin", [_vp, _str]),
    ("simprof_stage_end", [_vp, _str]),
    ("simprof_timings_count", [_vp, ctypes.POINTER(_size)]),
    ("simprof_timings_get", [_vp, _size, ctypes.POINTER(_str), ctypes.POINTER(_dbl)]),
    ("simprof_timing", [_vp, _str, ctypes.POINTER(_dbl)]),
    ("simprof_stage_table", [_vp, ctypes.c_char_p, _size, ctypes.POINTER(_size)]),
    ("simprof_fps", [_vp, ctypes.POINTER(_dbl), ctypes.POINTER(_dbl)]),
    ("simprof_set_show_fps", [_vp, _int]),
    ("simprof_fps_flush", [_vp]),
    ("simprof_set_fps_callback", [_vp, _FPS_CALLBACK, _vp]),
    ("simprof_running_mean_new_window", [_size, ctypes.POINTER(_vp)]),
    ("simprof_running_mean_new_ema", [_dbl, ctypes.POINTER(_vp)]),
    ("simprof_running_mean_update", [_vp, _dbl]),
    ("simprof_timer_stats_new", [ctypes.POINTER(_str), _int, _int, _dbl, ctypes.POINTER(_vp)]),
    ("simprof_timer_stats_update", [_vp, _vp, _int, _int, _dbl]),
    ("simprof_timer_stats_across_envs", [_vp, _int, _int, ctypes.POINTER(_dbl)]),
    ("simprof_timer_stats_slowest", [_vp, _int, _int, ctypes.POINTER(_int), ctypes.POINTER(_int)]),
    ("simprof_timer_plot", [_vp, _int, _int, ctypes.c_char_p, _size, ctypes.POINTER(_size)]),
    ("simprof_timer_svg", [_vp, _str, ctypes.c_char_p, _size, ctypes.POINTER(_size)]),
    ("simprof_trace_new", [_vp, _i64, _i64, _i64, _i64, _i64, _str, _int, ctypes.POINTER(_vp)]),
    ("simprof_trace_wait", [_vp]),
    ("simprof_trace_files_count", [_vp, ctypes.POINTER(_size)]),
    ("simprof_trace_file", [_vp, _size, ctypes.POINTER(_str)]),
    ("simprof_kernel_tracer_new", [_vp, _vp, _int, ctypes.POINTER(_vp)]),
    ("simprof_nvtx_new", [_vp, ctypes.POINTER(_vp)]),
]:
    _sig(_n, _int, *_a)
_sig("simprof_timer_stats_frames", _u64, _vp)
for _n in ("simprof_options_free", "simprof_profiler_free", "simprof_manual_clock_free",
           "simprof_running_mean_free",
           "simprof_timer_stats_free",
           "simprof_trace_free", "simprof_kernel_tracer_free", "simprof_nvtx_free"):
    _sig(_n, None, _vp)
_sig("simprof_steps", _u64, _vp)
_sig("simprof_running_mean_value", _dbl, _vp)
_sig("simprof_running_mean_count", _u64, _vp)
_sig("simprof_trace_windows", _u64, _vp)
_sig("simprof_trace_dropped", _u64, _vp)
_sig("simprof_kernel_tracer_enabled", _int, _vp)
_sig("simprof_kernel_tracer_reason", _str, _vp)
_sig("simprof_kernel_tracer_dropped", _u64, _vp)


def _check(status: int) -> None:
    if status != 0:
        raise _ERRORS.get(status, Error)(_last_error().decode("utf-8", "replace"))


def _new(fn, *args) -> int:
    out = _vp()
    _check(fn(*args, ctypes.byref(out)))
    return out.value


def version() -> str:
    return _lib.simprof_version().decode()


def has_cuda() -> bool:
    """Whether this build has the CUDA backend (KernelTracer, NvtxRanges)."""
    return bool(_lib.simprof_has_cuda())


class _Handle:
    _free = None

    def __init__(self, handle: int):
        self._h = handle

    def close(self) -> None:
        if getattr(self, "_h", None):
            type(self)._free(self._h)
            self._h = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ManualClock(_Handle):
    """A clock that moves only when told, for tests of code that reads simprof's times:
    StepProfiler(clock=ManualClock()) times everything by it. It starts at 0."""

    _free = _lib.simprof_manual_clock_free

    def __init__(self):
        super().__init__(_new(_lib.simprof_manual_clock_new))

    def advance(self, seconds: float) -> None:
        """Moves the clock `seconds` on (rounded to the nanosecond; negative is refused)."""
        self.advance_ns(round(seconds * 1e9))

    def advance_ns(self, ns: int) -> None:
        _check(_lib.simprof_manual_clock_advance_ns(self._h, int(ns)))

    @property
    def now_ns(self) -> int:
        out = _i64()
        _check(_lib.simprof_manual_clock_now_ns(self._h, ctypes.byref(out)))
        return out.value


class StepProfiler(_Handle):
    """simprof's StepProfiler: steps and stages, Genesis's timings, the FPS line.

    StepProfiler(n_envs=0, show_fps=True, alpha=0.95, interval_ms=50, timings_window=1,
                 stats_window=0, fps_callback=None, clock=None); the SIMPROF_* environment
    applies first. fps_callback(total_fps, fps_per_env, n_envs) is called at every FPS sample;
    clock: a ManualClock to time by instead of the system's (tests).
    """

    _free = _lib.simprof_profiler_free

    def __init__(self, n_envs: int = 0, show_fps: Optional[bool] = None,
                 alpha: Optional[float] = None, interval_ms: Optional[float] = None,
                 timings_window: Optional[int] = None, stats_window: Optional[int] = None,
                 fps_callback: Optional[Callable[[float, float, int], None]] = None,
                 clock: Optional[ManualClock] = None):
        opts = _new(_lib.simprof_options_new)
        try:
            if show_fps is not None:
                _check(_lib.simprof_options_set_show_fps(opts, int(bool(show_fps))))
            if alpha is not None:
                _check(_lib.simprof_options_set_alpha(opts, float(alpha)))
            if interval_ms is not None:
                _check(_lib.simprof_options_set_interval_ms(opts, float(interval_ms)))
            if timings_window is not None:
                if timings_window < 0:
                    raise InvalidArgument("simprof: timings_window = %d (expected >= 1)"
                                          % timings_window)
                _check(_lib.simprof_options_set_timings_window(opts, int(timings_window)))
            if stats_window is not None:
                if stats_window < 0:
                    raise InvalidArgument("simprof: stats_window = %d (expected >= 0)"
                                          % stats_window)
                _check(_lib.simprof_options_set_stats_window(opts, int(stats_window)))
            if clock is None:
                super().__init__(_new(_lib.simprof_profiler_new, opts, int(n_envs)))
            else:
                if not isinstance(clock, ManualClock):
                    raise InvalidArgument("simprof: clock = %r (expected a simprof.ManualClock)"
                                          % (clock,))
                super().__init__(_new(_lib.simprof_profiler_new_with_clock, opts, int(n_envs),
                                      clock._h))
                self._clock = clock  # the profiler reads it: it lives as long
        finally:
            _lib.simprof_options_free(opts)
        self._callback = None
        if fps_callback is not None:
            self.set_fps_callback(fps_callback)

    # --- steps and stages -------------------------------------------------------------------------
    def begin_step(self) -> None:
        _check(_lib.simprof_step_begin(self._h))

    def end_step(self) -> bool:
        """Ends the step; False when it was vetoed (its times are not published)."""
        published = _int()
        _check(_lib.simprof_step_end(self._h, ctypes.byref(published)))
        return bool(published.value)

    def veto(self) -> None:
        """Drops the current step: nothing of it is published, and the next has no period."""
        _check(_lib.simprof_step_veto(self._h))

    def begin_stage(self, name: str) -> None:
        _check(_lib.simprof_stage_begin(self._h, name.encode()))

    def end_stage(self, name: str) -> None:
        _check(_lib.simprof_stage_end(self._h, name.encode()))

    @contextlib.contextmanager
    def step(self):
        """with prof.step(): ... — an exception inside drops the step (nothing published)."""
        self.begin_step()
        try:
            yield self
        except BaseException:
            with contextlib.suppress(Error):
                self.veto()
                self.end_step()
            raise
        self.end_step()

    @contextlib.contextmanager
    def stage(self, name: str):
        """with prof.stage("physics"): ... ("sensors/Cam" rolls up into "sensors")."""
        self.begin_stage(name)
        try:
            yield
        finally:
            self.end_stage(name)

    def staged(self, name: str):
        """A decorator: every call of the function is the stage `name`."""
        def wrap(fn):
            @functools.wraps(fn)
            def inner(*args, **kwargs):
                with self.stage(name):
                    return fn(*args, **kwargs)
            return inner
        return wrap

    def stepped(self, fn):
        """A decorator: every call of the function is one step."""
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            with self.step():
                return fn(*args, **kwargs)
        return inner

    # --- what was measured ------------------------------------------------------------------------
    @property
    def timings(self) -> Dict[str, float]:
        """The latest published step, in seconds, with Genesis's keys: the stages that ran, "step",
        and "period" (absent on the first step and after a veto)."""
        n = _size()
        _check(_lib.simprof_timings_count(self._h, ctypes.byref(n)))
        out = {}
        name, value = _str(), _dbl()
        for i in range(n.value):
            _check(_lib.simprof_timings_get(self._h, i, ctypes.byref(name), ctypes.byref(value)))
            out[name.value.decode()] = value.value
        return out

    def timing(self, stage: str) -> float:
        """One stage's published seconds; InvalidArgument naming the stages present when absent."""
        v = _dbl()
        _check(_lib.simprof_timing(self._h, stage.encode(), ctypes.byref(v)))
        return v.value

    def stage_table(self) -> str:
        """mean, sd, p50/p95/p99 and share per stage over the stats window (needs stats_window)."""
        return _text(_lib.simprof_stage_table, self._h)

    @property
    def steps(self) -> int:
        return int(_lib.simprof_steps(self._h))

    @property
    def fps(self) -> float:
        """The FPS line's total rate (NaN before the first sample)."""
        total, per_env = _dbl(), _dbl()
        _check(_lib.simprof_fps(self._h, ctypes.byref(total), ctypes.byref(per_env)))
        return total.value

    @property
    def fps_per_env(self) -> float:
        total, per_env = _dbl(), _dbl()
        _check(_lib.simprof_fps(self._h, ctypes.byref(total), ctypes.byref(per_env)))
        return per_env.value

    def flush_fps(self) -> None:
        """Completes the FPS sample in progress to the last step (a run shorter than a sample)."""
        _check(_lib.simprof_fps_flush(self._h))

    def set_show_fps(self, show: bool) -> None:
        """Switches the FPS line at run time (from any thread)."""
        _check(_lib.simprof_set_show_fps(self._h, int(bool(show))))

    def set_fps_callback(self, fn: Optional[Callable[[float, float, int], None]]) -> None:
        if fn is None:
            self._callback = None
            _check(_lib.simprof_set_fps_callback(self._h, _FPS_CALLBACK(), None))
            return
        self._callback = _FPS_CALLBACK(lambda total, per_env, n, _user: fn(total, per_env, n))
        _check(_lib.simprof_set_fps_callback(self._h, self._callback, None))


class RunningMean(_Handle):
    """RunningMean(window=N) — the mean of the last N values (NaN until N arrived) — or
    RunningMean(alpha=a) — an EMA (NaN before the first value)."""

    _free = _lib.simprof_running_mean_free

    def __init__(self, window: Optional[int] = None, alpha: Optional[float] = None):
        if (window is None) == (alpha is None):
            raise InvalidArgument("simprof: RunningMean needs window=N or alpha=a (one of them)")
        if window is not None:
            if window < 0:
                raise InvalidArgument("simprof: RunningMean window = %d (expected >= 1)" % window)
            super().__init__(_new(_lib.simprof_running_mean_new_window, int(window)))
        else:
            super().__init__(_new(_lib.simprof_running_mean_new_ema, float(alpha)))

    def update(self, x: float) -> float:
        _check(_lib.simprof_running_mean_update(self._h, float(x)))
        return self.value

    @property
    def value(self) -> float:
        return _lib.simprof_running_mean_value(self._h)

    @property
    def count(self) -> int:
        return int(_lib.simprof_running_mean_count(self._h))


def _text(fn, *args) -> str:
    """A C call that writes text into a buffer: asks the size, then fills it."""
    needed = _size()
    _check(fn(*args, None, 0, ctypes.byref(needed)))
    buf = ctypes.create_string_buffer(needed.value)
    _check(fn(*args, buf, needed.value, None))
    return buf.value.decode()


class TimerStats(_Handle):
    """Per-env timer statistics for (rows, n_envs) frames of ticks read back from any framework
    (a NumPy array, a torch tensor's .cpu().numpy(), nested lists): the running mean per env (or an
    EMA with alpha), percentiles across envs, the slowest envs, and the same terminal plot and SVG
    as the C++ library.

        stats = simprof.TimerStats(["solve", "forces"], n_envs=4096)
        stats.update(timers.cpu().numpy(), ticks_per_second=1e9)   # nanosecond ticks
        print(stats.across_envs("solve")["p99"], stats.slowest("solve", 5))
        print(stats.plot("solve")); open("timers.svg", "w").write(stats.svg())
    """

    _free = _lib.simprof_timer_stats_free

    def __init__(self, labels, n_envs: int, alpha: Optional[float] = None):
        self.labels = [str(l) for l in labels]
        arr = (_str * len(self.labels))(*[l.encode() for l in self.labels])
        super().__init__(_new(_lib.simprof_timer_stats_new, arr, len(self.labels), int(n_envs),
                              -1.0 if alpha is None else float(alpha)))
        self.n_envs = int(n_envs)

    def _row(self, row) -> int:
        if isinstance(row, str):
            if row not in self.labels:
                raise InvalidArgument("simprof: no timer row '%s' (rows: %s)"
                                      % (row, ", ".join(self.labels)))
            return self.labels.index(row)
        return int(row)

    def update(self, frame, ticks_per_second: float = 1e9) -> None:
        """frame: (rows, n_envs) ticks, unsigned integers (1e9 ticks per second: nanoseconds)."""
        try:
            import numpy
        except ImportError:
            numpy = None
        if numpy is not None:
            a = numpy.ascontiguousarray(frame, dtype=numpy.uint64)
            if a.ndim != 2:
                raise InvalidArgument("simprof: timer frame of %d dimensions (expected (rows, "
                                      "n_envs))" % a.ndim)
            rows, n = a.shape
            ptr = a.ctypes.data_as(_vp)
        else:
            rows_list = [list(r) for r in frame]
            rows, n = len(rows_list), len(rows_list[0]) if rows_list else 0
            flat = (_u64 * (rows * n))(*[int(v) for r in rows_list for v in r])
            ptr = ctypes.cast(flat, _vp)
        _check(_lib.simprof_timer_stats_update(self._h, ptr, int(rows), int(n),
                                               float(ticks_per_second)))

    @property
    def frames(self) -> int:
        return int(_lib.simprof_timer_stats_frames(self._h))

    def across_envs(self, row, latest: bool = False) -> Dict[str, float]:
        """Seconds across envs of the running means (latest: of the latest frame)."""
        out = (_dbl * 6)()
        _check(_lib.simprof_timer_stats_across_envs(self._h, self._row(row), int(latest), out))
        return dict(zip(("min", "p50", "p95", "p99", "max", "mean"), out))

    def slowest(self, row, k: int = 5) -> List[int]:
        envs, count = (_int * max(int(k), 0))(), _int()
        _check(_lib.simprof_timer_stats_slowest(self._h, self._row(row), int(k), envs,
                                                ctypes.byref(count)))
        return list(envs[:count.value])

    def plot(self, row, width: int = 0) -> str:
        """The terminal plot of one row (latest per env, mean per env, distribution)."""
        return _text(_lib.simprof_timer_plot, self._h, self._row(row), int(width))

    def svg(self, title: str = "simprof timers") -> str:
        return _text(_lib.simprof_timer_svg, self._h, title.encode())


class TraceSession(_Handle):
    """Traces the steps a torch.profiler-style schedule selects to dir/<prefix>_<w>/rank<R>.json
    (Perfetto and Holistic Trace Analysis read them).

    TraceSession(prof, wait=0, warmup=0, active=1, repeat=1, skip_first=0, dir=".",
                 background=False)

    background=True hands each window over beside the loop: at the window's last step the loop
    only stops the kernel tracer; waiting for the window's kernels, converting and writing run on
    a thread of the session's own (no GIL held) while the loop goes on. windows and files grow once
    a window is written; wait() waits for it, and so do close() and the next window's start."""

    _free = _lib.simprof_trace_free

    def __init__(self, prof: StepProfiler, wait: int = 0, warmup: int = 0, active: int = 1,
                 repeat: int = 1, skip_first: int = 0, dir: str = ".", background: bool = False):
        super().__init__(_new(_lib.simprof_trace_new, prof._h, int(wait), int(warmup),
                              int(active), int(repeat), int(skip_first), dir.encode(),
                              1 if background else 0))
        self._prof = prof  # outlives this session

    def wait(self) -> None:
        """Returns once every window ended so far is written."""
        _check(_lib.simprof_trace_wait(self._h))

    @property
    def windows(self) -> int:
        return int(_lib.simprof_trace_windows(self._h))

    @property
    def dropped(self) -> int:
        return int(_lib.simprof_trace_dropped(self._h))

    @property
    def files(self) -> List[str]:
        n = _size()
        _check(_lib.simprof_trace_files_count(self._h, ctypes.byref(n)))
        out, path = [], _str()
        for i in range(n.value):
            _check(_lib.simprof_trace_file(self._h, i, ctypes.byref(path)))
            out.append(path.value.decode())
        return out


class KernelTracer(_Handle):
    """Every kernel, copy and launch of the process (torch, Warp, CuPy) in the session's windows,
    through CUPTI, next to the CPU stages. graph_launches=True writes one span per graph launch;
    kernels_only=True records kernels alone (the cheapest trace); cupti_clock=True keeps CUPTI's
    own timestamps, offset to the profiler's clock once per window (no per-record callback);
    runtime, driver, copies, syncs=False each leave one kind of record out; overhead=True adds
    CUPTI's own overhead records (costly: +10 points on a replayed 100-kernel graph). Disabled
    (enabled is False, reason says why) when another tool holds CUPTI."""

    _free = _lib.simprof_kernel_tracer_free

    def __init__(self, prof: StepProfiler, trace: TraceSession, graph_launches: bool = False,
                 kernels_only: bool = False, cupti_clock: bool = False, runtime: bool = True,
                 driver: bool = True, copies: bool = True, syncs: bool = True,
                 overhead: bool = False):
        flags = ((1 if graph_launches else 0) | (2 if kernels_only else 0) |
                 (4 if cupti_clock else 0) | (0 if runtime else 8) | (0 if driver else 16) |
                 (0 if copies else 32) | (0 if syncs else 64) | (128 if overhead else 0))
        super().__init__(_new(_lib.simprof_kernel_tracer_new, prof._h, trace._h, flags))
        self._keep = (prof, trace)

    @property
    def enabled(self) -> bool:
        return bool(_lib.simprof_kernel_tracer_enabled(self._h))

    @property
    def reason(self) -> str:
        return _lib.simprof_kernel_tracer_reason(self._h).decode()

    @property
    def dropped(self) -> int:
        return int(_lib.simprof_kernel_tracer_dropped(self._h))


class NvtxRanges(_Handle):
    """Steps and stages as NVTX ranges (domain "simprof"), for Nsight Systems and ncu."""

    _free = _lib.simprof_nvtx_free

    def __init__(self, prof: StepProfiler):
        super().__init__(_new(_lib.simprof_nvtx_new, prof._h))
        self._prof = prof
