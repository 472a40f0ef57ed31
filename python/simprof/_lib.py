# SPDX-License-Identifier: MIT
"""libsimprof_c.so through ctypes: finding and loading it, every C function's prototype, and the
helpers the public classes share (status checking, handle creation, text out of a buffer, the base
class that frees a handle). Private to the package: nothing here is part of simprof's API.

The library is $SIMPROF_LIBRARY when set, else the libsimprof_c.so next to this file (where the
build tree and cmake --install put it).
"""
import ctypes
import os
import weakref

from .errors import BY_STATUS, Error, LogicError


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
    ("simprof_write_run_record", [vp, cstr, cstr, ctypes.POINTER(cstr), ctypes.POINTER(cstr), size]),
    ("simprof_fps", [vp, ctypes.POINTER(dbl), ctypes.POINTER(dbl)]),
    ("simprof_set_show_fps", [vp, cint]),
    ("simprof_fps_flush", [vp]),
    ("simprof_fps_reset", [vp]),
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
    ("simprof_trace_new", [vp, vp, ctypes.POINTER(vp)]),
    ("simprof_trace_wait", [vp]),
    ("simprof_trace_files_count", [vp, ctypes.POINTER(size)]),
    ("simprof_trace_file", [vp, size, ctypes.POINTER(cstr)]),
    ("simprof_kernel_tracer_new", [vp, vp, cint, ctypes.POINTER(vp)]),
    ("simprof_nvtx_new", [vp, ctypes.POINTER(vp)]),
    ("simprof_collective_begin", [vp, vp, ctypes.POINTER(vp)]),
    ("simprof_stream_check", [vp, ctypes.POINTER(cint)]),
    ("simprof_step_pacer_new", [vp, vp, vp, ctypes.POINTER(vp)]),
    ("simprof_step_pacer_finish", [vp]),
    ("simprof_step_pacer_counters", [vp, vp]),
    ("simprof_step_pacer_device_steps", [vp, vp]),
    ("simprof_stage_timer_new", [vp, vp, vp, ctypes.POINTER(vp)]),
    ("simprof_stage_timer_set_stream", [vp, vp]),
    ("simprof_stage_timer_poll", [vp]),
    ("simprof_stage_timer_synchronize", [vp]),
    ("simprof_stage_timer_timings_count", [vp, ctypes.POINTER(size)]),
    ("simprof_stage_timer_timings_get", [vp, size, ctypes.POINTER(cstr), ctypes.POINTER(dbl)]),
    ("simprof_stage_timer_mean", [vp, cstr, cint, ctypes.POINTER(dbl)]),
    ("simprof_device_stage_table", [vp, vp, ctypes.c_char_p, size, ctypes.POINTER(size)]),
    ("simprof_write_device_run_record",
     [vp, vp, cstr, cstr, ctypes.POINTER(cstr), ctypes.POINTER(cstr), size]),
    ("simprof_stage_timer_capture_begin", [vp, vp]),
    ("simprof_stage_timer_capture_end", [vp]),
    ("simprof_stamped_graph_new", [vp, vp, ctypes.POINTER(vp)]),
    ("simprof_gpu_profile_new", [vp, vp, vp, vp, ctypes.POINTER(vp)]),
    ("simprof_gpu_profile_finish", [vp]),
    ("simprof_gpu_profile_report", [vp, ctypes.c_char_p, size, ctypes.POINTER(size)]),
    ("simprof_gpu_profile_mean", [vp, cstr, ctypes.POINTER(dbl)]),
    ("simprof_gpu_profile_counters_get", [vp, vp]),
    ("simprof_gpu_profile_capture_begin", [vp, vp]),
    ("simprof_gpu_profile_capture_end", [vp]),
    ("simprof_gpu_profile_stamp", [vp, vp, ctypes.POINTER(vp)]),
    ("simprof_stamped_graph_launch", [vp, vp, ctypes.POINTER(cint)]),
    ("simprof_kernel_timer_new", [vp, vp, vp, ctypes.POINTER(vp)]),
    ("simprof_kernel_timer_poll", [vp]),
    ("simprof_kernel_timer_join", [vp, vp]),
    ("simprof_kernel_timer_synchronize", [vp]),
    ("simprof_kernel_timer_capture_begin", [vp, vp]),
    ("simprof_kernel_timer_capture_end", [vp]),
    ("simprof_kernel_timer_stamp", [vp, vp, ctypes.POINTER(vp)]),
    ("simprof_kernel_timer_nodes_count", [vp, ctypes.POINTER(size)]),
    ("simprof_kernel_timer_node", [vp, size, vp]),
    ("simprof_kernel_timer_counters_get", [vp, vp]),
    ("simprof_kernel_table", [vp, size, ctypes.c_char_p, size, ctypes.POINTER(size)]),
    ("simprof_stopwatch_new", [vp, cint, cint, ctypes.POINTER(vp)]),
    ("simprof_stopwatch_start", [vp]),
    ("simprof_stopwatch_stop", [vp]),
    ("simprof_stopwatch_seconds", [vp, ctypes.POINTER(dbl), ctypes.POINTER(dbl),
                                   ctypes.POINTER(dbl)]),
    ("simprof_stopwatch_reset", [vp]),
    ("simprof_memory_tracker_new", [vp, vp, u64, ctypes.POINTER(vp)]),
    ("simprof_memory_tracker_total", [vp, cstr, vp]),
    ("simprof_memory_tracker_state", [vp, vp]),
]:
    _sig(_n, cint, *_a)
_sig("simprof_timer_stats_frames", u64, vp)
for _n in ("simprof_options_free", "simprof_profiler_free", "simprof_manual_clock_free",
           "simprof_running_mean_free", "simprof_timer_stats_free", "simprof_trace_free",
           "simprof_kernel_tracer_free", "simprof_nvtx_free", "simprof_collective_end",
           "simprof_step_pacer_free", "simprof_stage_timer_free", "simprof_stamped_graph_free",
           "simprof_kernel_timer_free", "simprof_gpu_profile_free",
           "simprof_gpu_profile_options_init", "simprof_stage_timer_options_init",
           "simprof_trace_options_init", "simprof_step_pacer_options_init",
           "simprof_kernel_timer_options_init", "simprof_collective_info_init",
           "simprof_stopwatch_free", "simprof_memory_tracker_free"):
    _sig(_n, None, vp)
_sig("simprof_steps", u64, vp)
_sig("simprof_running_mean_value", dbl, vp)
_sig("simprof_running_mean_count", u64, vp)
_sig("simprof_trace_windows", u64, vp)
_sig("simprof_trace_dropped", u64, vp)
_sig("simprof_kernel_tracer_enabled", cint, vp)
_sig("simprof_kernel_tracer_reason", cstr, vp)
_sig("simprof_kernel_tracer_dropped", u64, vp)
for _n in ("simprof_stage_timer_joined", "simprof_stage_timer_dropped",
           "simprof_stage_timer_unpaired", "simprof_stage_timer_unstamped",
           "simprof_stamped_graph_launches",
           "simprof_stopwatch_laps"):
    _sig(_n, u64, vp)
_sig("simprof_stamped_graph_instrumented", cint, vp)
_sig("simprof_stopwatch_clock_label", cstr, vp)
_sig("simprof_memory_tracker_enabled", cint, vp)
_sig("simprof_memory_tracker_reason", cstr, vp)


class PacerCounters(ctypes.Structure):
    """simprof_pacer_counters."""
    _fields_ = [("steps", u64), ("waits", u64), ("wait_s", dbl), ("most_in_flight", u64)]


class CollectiveInfoC(ctypes.Structure):
    """simprof_collective_info."""
    _fields_ = [("size", size), ("op", cstr), ("in_nelems", i64), ("out_nelems", i64),
                ("dtype", cstr), ("group_name", cstr), ("group_desc", cstr),
                ("ranks", ctypes.POINTER(cint)), ("n_ranks", size)]


class TraceOptionsC(ctypes.Structure):
    """simprof_trace_options."""
    _fields_ = [("size", size), ("wait", i64), ("warmup", i64), ("active", i64), ("repeat", i64),
                ("skip_first", i64), ("dir", cstr), ("flags", cint)]


class StepPacerOptionsC(ctypes.Structure):
    """simprof_step_pacer_options."""
    _fields_ = [("size", size), ("max_in_flight", cint), ("mark_every", cint),
                ("span_every", cint), ("fps_from_device", cint)]


class GpuProfileOptionsC(ctypes.Structure):
    """simprof_gpu_profile_options."""
    _fields_ = [("size", size), ("max_in_flight", cint), ("fps_from_device", cint),
                ("stage_sample_every", cint), ("kernel_sample_every", cint)]


class StageTimerOptionsC(ctypes.Structure):
    """simprof_stage_timer_options."""
    _fields_ = [("size", size), ("sample_every", cint), ("max_in_flight", cint), ("ring", size),
                ("fps_from_device", cint), ("merge_within_ns", cint)]


class KernelTimerOptionsC(ctypes.Structure):
    """simprof_kernel_timer_options."""
    _fields_ = [("size", size), ("sample_every", cint), ("sample_offset", cint), ("ring", size),
                ("max_stamps", size)]


class GpuProfileCountersC(ctypes.Structure):
    """simprof_gpu_profile_counters."""
    _fields_ = [("steps", u64), ("stages_joined", u64), ("stages_dropped", u64),
                ("stages_unstamped", u64), ("kernel_replays", u64), ("kernel_dropped", u64)]


class DeviceStepsC(ctypes.Structure):
    """simprof_device_steps."""
    _fields_ = [("steps", u64), ("completed", u64), ("missed", u64), ("periods", u64),
                ("mean_step_s", dbl), ("mean_period_s", dbl)]


class KernelNodeC(ctypes.Structure):
    """simprof_kernel_node."""
    _fields_ = [("name", cstr), ("stage", cstr), ("kernel", cint), ("graph_id", u64),
                ("node_id", u64), ("copy", ctypes.c_uint32), ("index", ctypes.c_uint32),
                ("count", u64), ("mean_s", dbl), ("min_s", dbl), ("max_s", dbl)]


class KernelTimerCountersC(ctypes.Structure):
    """simprof_kernel_timer_counters."""
    _fields_ = [("replays", u64), ("missed", u64), ("dropped", u64), ("unstamped", u64),
                ("hop_ns", dbl)]


class AllocCountsC(ctypes.Structure):
    """simprof_alloc_counts."""
    _fields_ = [("allocs", u64), ("alloc_bytes", u64), ("frees", u64), ("free_bytes", u64),
                ("steps", u64)]


class MemoryStateC(ctypes.Structure):
    """simprof_memory_state."""
    _fields_ = [("in_use_bytes", i64), ("peak_bytes", i64), ("steady_allocating_steps", u64),
                ("first_step", u64), ("first_allocs", u64), ("first_bytes", u64),
                ("first_stage", cstr)]


def fields(struct) -> dict:
    """A ctypes.Structure as a dict of its fields."""
    return {name: getattr(struct, name) for name, _ in struct._fields_}


def options(struct, init, **values):
    """A C options struct: its _init's defaults (and size), then each value given that is not
    None."""
    o = struct()
    init(ctypes.byref(o))
    for name, value in values.items():
        if value is not None:
            setattr(o, name, int(value))
    return o


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
    with the subclass's _free. A handle made on others (a tracer on its profiler and session) holds
    them, so they outlive it, and is closed first when one of them is closed: the C library never
    sees a handle whose parent is gone. Using a closed handle raises simprof.LogicError saying so."""

    _free = None

    def __init__(self, handle: int, *parents: "Handle"):
        self._ptr = handle
        self._parents = parents  # kept alive as long as this handle
        for p in parents:
            p._children().add(self)

    def _children(self) -> "weakref.WeakSet":
        kids = self.__dict__.get("_kids")
        if kids is None:
            kids = self.__dict__["_kids"] = weakref.WeakSet()
        return kids

    @property
    def _h(self) -> int:
        h = self.__dict__.get("_ptr")
        if not h:
            raise LogicError("simprof: this %s is closed (close() was called or its with block "
                             "ended, or an object it was made on was closed): make a new one"
                             % type(self).__name__)
        return h

    @property
    def closed(self) -> bool:
        """Whether close() ran (directly, or through an object this one was made on)."""
        return not self.__dict__.get("_ptr")

    def close(self) -> None:
        """Frees the C handle, after closing what was made on this object; a second call does
        nothing."""
        for kid in list(self.__dict__.get("_kids") or ()):
            kid.close()
        h = self.__dict__.get("_ptr")
        if h:
            self._ptr = None
            self._release(h)
            self.__dict__.pop("_stream_obj", None)  # a stream object held while the handle used it

    def _release(self, h: int) -> None:
        type(self)._free(h)

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    def __enter__(self):
        self._h  # a closed handle says so here
        return self

    def __exit__(self, *exc):
        self.close()
