# SPDX-License-Identifier: MIT
"""simprof.cuda.Stopwatch: sections of the work on a stream, on the GPU's clock or the host's."""
from __future__ import annotations

import contextlib
import ctypes
from typing import Any, Callable, Iterator

from ._lib import Handle, check, dbl, lib, new
from .cuda import stream_handle
from .errors import InvalidArgument


class Stopwatch(Handle):
    """Sections of the work on a stream, lap by lap, on the GPU's clock (clock="device": CUDA
    events, work queued before the lap never counted) or the host's (clock="host_drained": the
    stream drained at each end).

        watch = simprof.cuda.Stopwatch()
        with watch.lap():
            validate()
        print(watch.mean_s, watch.clock_label)
    """

    _free = lib.simprof_stopwatch_free
    _CLOCKS = {"device": 0, "host_drained": 1}

    def __init__(self, stream: Any = None, clock: str = "device", pending: int = 4):
        if clock not in self._CLOCKS:
            raise InvalidArgument("simprof: Stopwatch clock = %r (expected 'device' or "
                                  "'host_drained')" % (clock,))
        handle = stream_handle(stream)
        super().__init__(new(lib.simprof_stopwatch_new, handle, self._CLOCKS[clock],
                             int(pending)))
        self.stream, self._stream_obj = handle, stream

    def start(self) -> None:
        """Starts a lap (LogicError when one runs)."""
        check(lib.simprof_stopwatch_start(self._h))

    def stop(self) -> None:
        """Ends the running lap (LogicError when none runs); does not wait for the GPU."""
        check(lib.simprof_stopwatch_stop(self._h))

    @contextlib.contextmanager
    def lap(self) -> Iterator[None]:
        """start() now, stop() when the block ends (an exception included)."""
        self.start()
        try:
            yield
        finally:
            self.stop()

    def time(self, section: Callable[[], Any]) -> float:
        """Runs `section` as one lap and returns its seconds."""
        with self.lap():
            section()
        return self.last_s

    def _seconds(self) -> tuple:
        last, total, mean = dbl(), dbl(), dbl()
        check(lib.simprof_stopwatch_seconds(self._h, ctypes.byref(last), ctypes.byref(total),
                                            ctypes.byref(mean)))
        return last.value, total.value, mean.value

    @property
    def last_s(self) -> float:
        """Seconds of the last lap (waits for it); 0 when none was stopped."""
        return self._seconds()[0]

    @property
    def total_s(self) -> float:
        """Seconds of every lap since construction or reset() (waits for them)."""
        return self._seconds()[1]

    @property
    def mean_s(self) -> float:
        """total_s / laps; 0 when no lap was stopped."""
        return self._seconds()[2]

    @property
    def laps(self) -> int:
        """Laps stopped since construction or reset()."""
        return int(lib.simprof_stopwatch_laps(self._h))

    @property
    def clock_label(self) -> str:
        """"CUDA events" or "host clock, stream drained": say it next to a printed figure."""
        return lib.simprof_stopwatch_clock_label(self._h).decode()

    def reset(self) -> None:
        """Forgets every lap (LogicError while one runs)."""
        check(lib.simprof_stopwatch_reset(self._h))
