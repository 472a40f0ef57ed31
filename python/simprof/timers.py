# SPDX-License-Identifier: MIT
"""Per-env timer statistics of (rows, n_envs) tick buffers read back from a framework (TimerStats):
the same statistics, terminal plot and SVG as the C++ library's."""
from __future__ import annotations

import ctypes
from typing import Any, Dict, Iterable, List, Optional, Union

Row = Union[str, int]

from ._lib import Handle, check, cint, cstr, dbl, lib, new, text, u64, vp
from .errors import InvalidArgument

__all__ = ["TimerStats"]


class TimerStats(Handle):
    """Per-env timer statistics for (rows, n_envs) frames of ticks read back from any framework
    (a NumPy array, a torch tensor's .cpu().numpy(), nested lists): the running mean per env (or an
    EMA with alpha), percentiles across envs, the slowest envs, and the same terminal plot and SVG
    as the C++ library.

        stats = simprof.TimerStats(["solve", "forces"], n_envs=4096)
        stats.update(timers.cpu().numpy(), ticks_per_second=1e9)   # nanosecond ticks
        print(stats.across_envs("solve")["p99"], stats.slowest("solve", 5))
        print(stats.plot("solve")); open("timers.svg", "w").write(stats.svg())
    """

    _free = lib.simprof_timer_stats_free

    def __init__(self, labels: Iterable[str], n_envs: int, alpha: Optional[float] = None):
        self.labels = [str(l) for l in labels]
        arr = (cstr * len(self.labels))(*[l.encode() for l in self.labels])
        super().__init__(new(lib.simprof_timer_stats_new, arr, len(self.labels), int(n_envs),
                              -1.0 if alpha is None else float(alpha)))
        self.n_envs = int(n_envs)

    def _row(self, row: Row) -> int:
        if isinstance(row, str):
            if row not in self.labels:
                raise InvalidArgument("simprof: no timer row '%s' (rows: %s)"
                                      % (row, ", ".join(self.labels)))
            return self.labels.index(row)
        return int(row)

    def update(self, frame: Any, ticks_per_second: float = 1e9) -> None:
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
            ptr = a.ctypes.data_as(vp)
        else:
            rows_list = [list(r) for r in frame]
            rows, n = len(rows_list), len(rows_list[0]) if rows_list else 0
            flat = (u64 * (rows * n))(*[int(v) for r in rows_list for v in r])
            ptr = ctypes.cast(flat, vp)
        check(lib.simprof_timer_stats_update(self._h, ptr, int(rows), int(n),
                                               float(ticks_per_second)))

    @property
    def frames(self) -> int:
        """Frames added so far."""
        return int(lib.simprof_timer_stats_frames(self._h))

    def across_envs(self, row: Row, latest: bool = False) -> Dict[str, float]:
        """Seconds across envs of the running means (latest: of the latest frame)."""
        out = (dbl * 6)()
        check(lib.simprof_timer_stats_across_envs(self._h, self._row(row), int(latest), out))
        return dict(zip(("min", "p50", "p95", "p99", "max", "mean"), out))

    def slowest(self, row: Row, k: int = 5) -> List[int]:
        """The k slowest envs of `row` by running mean, slowest first."""
        envs, count = (cint * max(int(k), 0))(), cint()
        check(lib.simprof_timer_stats_slowest(self._h, self._row(row), int(k), envs,
                                                ctypes.byref(count)))
        return list(envs[:count.value])

    def plot(self, row: Row, width: int = 0) -> str:
        """The terminal plot of one row (latest per env, mean per env, distribution)."""
        return text(lib.simprof_timer_plot, self._h, self._row(row), int(width))

    def svg(self, title: str = "simprof timers") -> str:
        """Every row as an SVG document (write it to a .svg file)."""
        return text(lib.simprof_timer_svg, self._h, title.encode())
