# SPDX-License-Identifier: MIT
"""The profiler: StepProfiler (steps, stages, Genesis's timings, the FPS line), the ManualClock
tests time it by, RunningMean, and the library's version."""
from __future__ import annotations

import contextlib
import ctypes
import functools
from typing import Any, Callable, Dict, Iterator, Optional, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])

from ._lib import FPS_CALLBACK, Handle, check, cint, cstr, dbl, i64, lib, new, size, text
from .errors import Error, InvalidArgument

__all__ = ["StepProfiler", "ManualClock", "RunningMean", "version"]


def version() -> str:
    """simprof's version, as the loaded libsimprof_c.so reports it."""
    return lib.simprof_version().decode()


class ManualClock(Handle):
    """A clock that moves only when told, for tests of code that reads simprof's times:
    StepProfiler(clock=ManualClock()) times everything by it. It starts at 0."""

    _free = lib.simprof_manual_clock_free

    def __init__(self):
        super().__init__(new(lib.simprof_manual_clock_new))

    def advance(self, seconds: float) -> None:
        """Moves the clock `seconds` on (rounded to the nanosecond; negative is refused)."""
        self.advance_ns(round(seconds * 1e9))

    def advance_ns(self, ns: int) -> None:
        """Moves the clock `ns` nanoseconds on (negative is refused)."""
        check(lib.simprof_manual_clock_advance_ns(self._h, int(ns)))

    @property
    def now_ns(self) -> int:
        """The clock's time, nanoseconds since it was made."""
        out = i64()
        check(lib.simprof_manual_clock_now_ns(self._h, ctypes.byref(out)))
        return out.value


class StepProfiler(Handle):
    """simprof's StepProfiler: steps and stages, Genesis's timings, the FPS line.

    StepProfiler(n_envs=0, show_fps=True, alpha=0.95, interval_ms=50, timings_window=1,
                 stats_window=0, fps_callback=None, clock=None); the SIMPROF_* environment
    applies first. fps_callback(total_fps, fps_per_env, n_envs) is called at every FPS sample;
    clock: a ManualClock to time by instead of the system's (tests).
    """

    _free = lib.simprof_profiler_free

    def __init__(self, n_envs: int = 0, show_fps: Optional[bool] = None,
                 alpha: Optional[float] = None, interval_ms: Optional[float] = None,
                 timings_window: Optional[int] = None, stats_window: Optional[int] = None,
                 fps_callback: Optional[Callable[[float, float, int], None]] = None,
                 clock: Optional[ManualClock] = None):
        opts = new(lib.simprof_options_new)
        try:
            if show_fps is not None:
                check(lib.simprof_options_set_show_fps(opts, int(bool(show_fps))))
            if alpha is not None:
                check(lib.simprof_options_set_alpha(opts, float(alpha)))
            if interval_ms is not None:
                check(lib.simprof_options_set_interval_ms(opts, float(interval_ms)))
            if timings_window is not None:
                if timings_window < 0:
                    raise InvalidArgument("simprof: timings_window = %d (expected >= 1)"
                                          % timings_window)
                check(lib.simprof_options_set_timings_window(opts, int(timings_window)))
            if stats_window is not None:
                if stats_window < 0:
                    raise InvalidArgument("simprof: stats_window = %d (expected >= 0)"
                                          % stats_window)
                check(lib.simprof_options_set_stats_window(opts, int(stats_window)))
            if clock is None:
                super().__init__(new(lib.simprof_profiler_new, opts, int(n_envs)))
            else:
                if not isinstance(clock, ManualClock):
                    raise InvalidArgument("simprof: clock = %r (expected a simprof.ManualClock)"
                                          % (clock,))
                super().__init__(new(lib.simprof_profiler_new_with_clock, opts, int(n_envs),
                                      clock._h), clock)  # the profiler reads it: it lives as long
        finally:
            lib.simprof_options_free(opts)
        self._callback = None
        if fps_callback is not None:
            self.set_fps_callback(fps_callback)

    # --- steps and stages -------------------------------------------------------------------------
    def begin_step(self) -> None:
        """Starts a step (LogicError inside a step); end it with end_step()."""
        check(lib.simprof_step_begin(self._h))

    def end_step(self) -> bool:
        """Ends the step; False when it was vetoed (its times are not published)."""
        published = cint()
        check(lib.simprof_step_end(self._h, ctypes.byref(published)))
        return bool(published.value)

    def veto(self) -> None:
        """Drops the current step: nothing of it is published, and the next has no period."""
        check(lib.simprof_step_veto(self._h))

    def begin_stage(self, name: str) -> None:
        """Opens stage `name` in the current step (LogicError outside a step)."""
        check(lib.simprof_stage_begin(self._h, name.encode()))

    def end_stage(self, name: str) -> None:
        """Closes stage `name`, which must be the innermost open one."""
        check(lib.simprof_stage_end(self._h, name.encode()))

    @contextlib.contextmanager
    def step(self) -> Iterator["StepProfiler"]:
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
    def stage(self, name: str) -> Iterator[None]:
        """with prof.stage("physics"): ... ("sensors/Cam" rolls up into "sensors")."""
        self.begin_stage(name)
        try:
            yield
        finally:
            self.end_stage(name)

    def staged(self, name: str) -> Callable[[F], F]:
        """A decorator: every call of the function is the stage `name`."""
        def wrap(fn: F) -> F:
            @functools.wraps(fn)
            def inner(*args: Any, **kwargs: Any) -> Any:
                with self.stage(name):
                    return fn(*args, **kwargs)
            return cast(F, inner)
        return wrap

    def stepped(self, fn: F) -> F:
        """A decorator: every call of the function is one step."""
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            with self.step():
                return fn(*args, **kwargs)
        return cast(F, inner)

    # --- what was measured ------------------------------------------------------------------------
    @property
    def timings(self) -> Dict[str, float]:
        """The latest published step, in seconds, with Genesis's keys: the stages that ran, "step",
        and "period" (absent on the first step and after a veto)."""
        n = size()
        check(lib.simprof_timings_count(self._h, ctypes.byref(n)))
        out = {}
        name, value = cstr(), dbl()
        for i in range(n.value):
            check(lib.simprof_timings_get(self._h, i, ctypes.byref(name), ctypes.byref(value)))
            out[name.value.decode()] = value.value
        return out

    def timing(self, stage: str) -> float:
        """One stage's published seconds; InvalidArgument naming the stages present when absent."""
        v = dbl()
        check(lib.simprof_timing(self._h, stage.encode(), ctypes.byref(v)))
        return v.value

    def stage_table(self) -> str:
        """mean, sd, p50/p95/p99 and share per stage over the stats window (needs stats_window)."""
        return text(lib.simprof_stage_table, self._h)

    def write_run_record(self, path: str, workload: Optional[Dict[str, Any]] = None,
                         tool: str = "simprof python", device: Any = None) -> None:
        """Writes the run record ``simprof compare`` reads (schema simprof.run/2) to ``path``,
        atomically. ``workload``: what decides a step's work besides n_envs (scene, solver...);
        compare refuses records whose workloads differ. ``device``: a DeviceStageTimer whose
        stages (with their samples) the record holds too, compared like the host's. Needs
        stats_window."""
        items = [(str(k), str(v)) for k, v in (workload or {}).items()]
        keys = (cstr * max(1, len(items)))(*[k.encode() for k, _ in items])
        values = (cstr * max(1, len(items)))(*[v.encode() for _, v in items])
        args = (str(path).encode(), tool.encode(), keys, values, len(items))
        if device is None:
            check(lib.simprof_write_run_record(self._h, *args))
        elif (type(device).__name__ != "DeviceStageTimer" or getattr(device, "_h", None) is None
              or getattr(device, "_prof", None) is not self):
            raise InvalidArgument("simprof: write_run_record device = %r (expected a "
                                  "simprof.DeviceStageTimer of this profiler)" % (device,))
        else:
            check(lib.simprof_write_device_run_record(self._h, device._h, *args))

    @property
    def steps(self) -> int:
        """Steps that ended and were published (vetoed and dropped ones are not counted)."""
        return int(lib.simprof_steps(self._h))

    @property
    def fps(self) -> float:
        """The FPS line's total rate (NaN before the first sample)."""
        total, per_env = dbl(), dbl()
        check(lib.simprof_fps(self._h, ctypes.byref(total), ctypes.byref(per_env)))
        return total.value

    @property
    def fps_per_env(self) -> float:
        """The FPS line's rate per env (NaN before the first sample)."""
        total, per_env = dbl(), dbl()
        check(lib.simprof_fps(self._h, ctypes.byref(total), ctypes.byref(per_env)))
        return per_env.value

    def flush_fps(self) -> None:
        """Completes the FPS sample in progress to the last step (a run shorter than a sample)."""
        check(lib.simprof_fps_flush(self._h))

    def reset_fps(self) -> None:
        """Starts the FPS line afresh (no sample, no average): the rate from now on, e.g. after
        a warm-up or a graph capture."""
        check(lib.simprof_fps_reset(self._h))

    def set_show_fps(self, show: bool) -> None:
        """Switches the FPS line at run time (from any thread)."""
        check(lib.simprof_set_show_fps(self._h, int(bool(show))))

    def set_fps_callback(self, fn: Optional[Callable[[float, float, int], None]]) -> None:
        """fn(total_fps, fps_per_env, n_envs) at every FPS sample; None stops it."""
        if fn is None:
            self._callback = None
            check(lib.simprof_set_fps_callback(self._h, FPS_CALLBACK(), None))
            return
        self._callback = FPS_CALLBACK(lambda total, per_env, n, _user: fn(total, per_env, n))
        check(lib.simprof_set_fps_callback(self._h, self._callback, None))


class RunningMean(Handle):
    """RunningMean(window=N) — the mean of the last N values (NaN until N arrived) — or
    RunningMean(alpha=a) — an EMA (NaN before the first value)."""

    _free = lib.simprof_running_mean_free

    def __init__(self, window: Optional[int] = None, alpha: Optional[float] = None):
        if (window is None) == (alpha is None):
            raise InvalidArgument("simprof: RunningMean needs window=N or alpha=a (one of them)")
        if window is not None:
            if window < 0:
                raise InvalidArgument("simprof: RunningMean window = %d (expected >= 1)" % window)
            super().__init__(new(lib.simprof_running_mean_new_window, int(window)))
        else:
            super().__init__(new(lib.simprof_running_mean_new_ema, float(alpha)))

    def update(self, x: float) -> float:
        """Adds `x` (NaN is refused) and returns the mean."""
        check(lib.simprof_running_mean_update(self._h, float(x)))
        return self.value

    @property
    def value(self) -> float:
        """The mean (NaN until the window is full, or before the first value of an EMA)."""
        return lib.simprof_running_mean_value(self._h)

    @property
    def count(self) -> int:
        """Values added so far."""
        return int(lib.simprof_running_mean_count(self._h))
