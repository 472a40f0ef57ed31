# SPDX-License-Identifier: MIT
"""libsimprof_c.so through ctypes: finding and loading it, every C function's prototype, and the
helpers the public classes share (status checking, handle creation, text out of a buffer, the base
class that frees a handle). Private to the package: nothing here is part of simprof's API.

The library is $SIMPROF_LIBRARY when set, else the libsimprof_c.so next to this file (where the
build tree and cmake --install put it).
"""
import ctypes
import os

from .errors import BY_STATUS, Error


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


lib = _load()

# The C types of simprof.h's signatures.
vp = ctypes.c_void_p
i64 = ctypes.c_int64
u64 = ctypes.c_uint64
cint = ctypes.c_int
dbl = ctypes.c_double
size = ctypes.c_size_t
cstr = ctypes.c_char_p
# simprof_fps_callback: void (*)(double total_fps, double fps_per_env, int64_t n_envs, void* user)
FPS_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_double, ctypes.c_double, ctypes.c_int64, vp)


def _sig(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


last_error = _sig("simprof_last_error", cstr)
_sig("simprof_version", cstr)
_sig("simprof_has_cuda", cint)
for _n, _a in [
    ("simprof_options_new", [ctypes.POINTER(vp)]),
    ("simprof_options_set_show_fps", [vp, cint]),
    ("simprof_options_set_alpha", [vp, dbl]),
    ("simprof_options_set_interval_ms", [vp, dbl]),
    ("simprof_options_set_timings_window", [vp, u64]),
    ("simprof_options_set_stats_window", [vp, u64]),
    ("simprof_profiler_new", [vp, i64, ctypes.POINTER(vp)]),
    ("simprof_profiler_new_with_clock", [vp, i64, vp, ctypes.POINTER(vp)]),
    ("simprof_manual_clock_new", [ctypes.POINTER(vp)]),
    ("simprof_manual_clock_advance_ns", [vp, i64]),
    ("simprof_manual_clock_now_ns", [vp, ctypes.POINTER(i64)]),
    ("simprof_step_begin", [vp]),
    ("simprof_step_end", [vp, ctypes.POINTER(cint)]),
    ("simprof_step_veto", [vp]),
    ("simprof_stage_begin", [vp, cstr]),
    ("simprof_stage_end", [vp, cstr]),
    ("simprof_timings_count", [vp, ctypes.POINTER(size)]),
    ("simprof_timings_get", [vp, size, ctypes.POINTER(cstr), ctypes.POINTER(dbl)]),
    ("simprof_timing", [vp, cstr, ctypes.POINTER(dbl)]),
    ("simprof_stage_table", [vp, ctypes.c_char_p, size, ctypes.POINTER(size)]),
    ("simprof_fps", [vp, ctypes.POINTER(dbl), ctypes.POINTER(dbl)]),
    ("simprof_set_show_fps", [vp, cint]),
    ("simprof_fps_flush", [vp]),
    ("simprof_set_fps_callback", [vp, FPS_CALLBACK, vp]),
    ("simprof_running_mean_new_window", [size, ctypes.POINTER(vp)]),
    ("simprof_running_mean_new_ema", [dbl, ctypes.POINTER(vp)]),
    ("simprof_running_mean_update", [vp, dbl]),
    ("simprof_timer_stats_new", [ctypes.POINTER(cstr), cint, cint, dbl, ctypes.POINTER(vp)]),
    ("simprof_timer_stats_update", [vp, vp, cint, cint, dbl]),
    ("simprof_timer_stats_across_envs", [vp, cint, cint, ctypes.POINTER(dbl)]),
    ("simprof_timer_stats_slowest", [vp, cint, cint, ctypes.POINTER(cint), ctypes.POINTER(cint)]),
    ("simprof_timer_plot", [vp, cint, cint, ctypes.c_char_p, size, ctypes.POINTER(size)]),
    ("simprof_timer_svg", [vp, cstr, ctypes.c_char_p, size, ctypes.POINTER(size)]),
    ("simprof_trace_new", [vp, i64, i64, i64, i64, i64, cstr, cint, ctypes.POINTER(vp)]),
    ("simprof_trace_wait", [vp]),
    ("simprof_trace_files_count", [vp, ctypes.POINTER(size)]),
    ("simprof_trace_file", [vp, size, ctypes.POINTER(cstr)]),
    ("simprof_kernel_tracer_new", [vp, vp, cint, ctypes.POINTER(vp)]),
    ("simprof_nvtx_new", [vp, ctypes.POINTER(vp)]),
]:
    _sig(_n, cint, *_a)
_sig("simprof_timer_stats_frames", u64, vp)
for _n in ("simprof_options_free", "simprof_profiler_free", "simprof_manual_clock_free",
           "simprof_running_mean_free",
           "simprof_timer_stats_free",
           "simprof_trace_free", "simprof_kernel_tracer_free", "simprof_nvtx_free"):
    _sig(_n, None, vp)
_sig("simprof_steps", u64, vp)
_sig("simprof_running_mean_value", dbl, vp)
_sig("simprof_running_mean_count", u64, vp)
_sig("simprof_trace_windows", u64, vp)
_sig("simprof_trace_dropped", u64, vp)
_sig("simprof_kernel_tracer_enabled", cint, vp)
_sig("simprof_kernel_tracer_reason", cstr, vp)
_sig("simprof_kernel_tracer_dropped", u64, vp)



def check(status: int) -> None:
    """Raises the simprof.Error subclass of a non-zero simprof_status, with simprof's message."""
    if status != 0:
        raise BY_STATUS.get(status, Error)(last_error().decode("utf-8", "replace"))


def new(fn, *args) -> int:
    """Calls a simprof_*_new(args..., &out) and returns the handle."""
    out = vp()
    check(fn(*args, ctypes.byref(out)))
    return out.value


def text(fn, *args) -> str:
    """A C call that writes text into a buffer: asks the size, then fills it."""
    needed = size()
    check(fn(*args, None, 0, ctypes.byref(needed)))
    buf = ctypes.create_string_buffer(needed.value)
    check(fn(*args, buf, needed.value, None))
    return buf.value.decode()


class Handle:
    """An owned C handle: close() (or the with block's end, or garbage collection) frees it once
    with the subclass's _free."""

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
