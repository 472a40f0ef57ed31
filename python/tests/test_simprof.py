# SPDX-License-Identifier: MIT
"""The simprof Python package over the C API: Genesis's timings, the FPS line, RunningMean, traces,
the CUDA backend's handles, and bad input raised as Python exceptions with simprof's message."""
import json
import math
import os

import pytest

import simprof


def quiet(**kw):
    return simprof.StepProfiler(show_fps=False, **kw)


def test_timings_follow_genesis():
    prof = quiet(n_envs=8)
    with prof.step():
        with prof.stage("physics"):
            pass
        with prof.stage("sensors/Cam"):
            pass
    t = prof.timings
    assert set(t) == {"physics", "sensors", "sensors/Cam", "step"}, t  # no period on the first step
    assert t["sensors"] == t["sensors/Cam"]  # a sensor class rolls up into "sensors"
    assert all(v >= 0 for v in t.values())
    with prof.step():
        with prof.stage("physics"):
            pass
    t = prof.timings
    assert set(t) == {"physics", "step", "period"}, t  # a stage that did not run is absent
    assert prof.timing("physics") == t["physics"]
    assert prof.steps == 2


def test_a_veto_clears_the_map_and_the_next_step_has_no_period():
    prof = quiet()
    with prof.step():
        pass
    with prof.step():
        prof.veto()
    assert prof.timings == {}
    with prof.step():
        pass
    assert "period" not in prof.timings
    assert prof.end_step.__doc__  # the manual API is there too
    prof.begin_step()
    prof.veto()
    assert prof.end_step() is False


def test_an_exception_inside_a_step_drops_it():
    prof = quiet()
    with pytest.raises(KeyError):
        with prof.step():
            with prof.stage("physics"):
                raise KeyError("boom")
    assert prof.steps == 0
    with prof.step():
        pass
    assert prof.steps == 1


def test_decorators():
    prof = quiet()

    @prof.staged("physics")
    def physics(x):
        return x + 1

    @prof.stepped
    def step(x):
        return physics(x)

    assert step(1) == 2
    assert "physics" in prof.timings


def test_bad_input_raises_with_simprofs_message():
    with pytest.raises(simprof.InvalidArgument, match=r"fps_tracker_alpha = 1\.5") as e:
        simprof.StepProfiler(alpha=1.5)
    assert isinstance(e.value, ValueError)
    with pytest.raises(simprof.InvalidArgument, match="interval"):
        simprof.StepProfiler(interval_ms=-1)
    prof = quiet()
    with pytest.raises(simprof.LogicError, match="outside a step") as e:
        prof.begin_stage("physics")
    assert isinstance(e.value, RuntimeError)
    with prof.step():
        pass
    with pytest.raises(simprof.InvalidArgument, match="no timing for stage 'nosuch'"):
        prof.timing("nosuch")
    with pytest.raises(simprof.InvalidArgument, match="no stage named 'never'"):
        prof.end_stage("never")
    with pytest.raises(simprof.LogicError, match="outside a step"):
        prof.end_step()
    with pytest.raises(simprof.InvalidArgument, match="stats_window"):
        prof.stage_table()  # stats_window is 0
    with pytest.raises(simprof.InvalidArgument, match="window"):
        simprof.RunningMean(window=0)
    with pytest.raises(simprof.InvalidArgument, match="alpha"):
        simprof.RunningMean(alpha=2.0)
    with pytest.raises(simprof.InvalidArgument, match="NaN|finite"):
        simprof.RunningMean(alpha=0.5).update(math.nan)


def test_stage_table_and_stats():
    prof = quiet(stats_window=16)
    for _ in range(4):
        with prof.step():
            with prof.stage("physics"):
                pass
    table = prof.stage_table()
    assert "physics" in table and "p99 us" in table and "100.0%" in table


def test_fps_line_callback_and_switch():
    seen = []
    prof = simprof.StepProfiler(n_envs=30000, show_fps=False, interval_ms=0.001,
                                fps_callback=lambda total, per_env, n: seen.append((total, n)))
    for _ in range(20):
        with prof.step():
            pass
    prof.flush_fps()
    assert seen and all(n == 30000 and total > 0 for total, n in seen), seen
    assert prof.fps > 0 and prof.fps_per_env > 0
    assert math.isclose(prof.fps, prof.fps_per_env * 30000, rel_tol=1e-9)
    prof.set_show_fps(False)
    prof.set_fps_callback(None)
    assert math.isnan(quiet().fps)


def test_running_mean():
    m = simprof.RunningMean(window=3)
    assert math.isnan(m.update(1.0))  # not full yet
    m.update(2.0)
    assert m.update(3.0) == pytest.approx(2.0)
    assert m.update(4.0) == pytest.approx(3.0)
    assert m.count == 4
    e = simprof.RunningMean(alpha=0.5)
    assert e.update(2.0) == pytest.approx(2.0)


def test_trace_session_writes_the_same_trace_as_cpp(tmp_path):
    prof = quiet()
    trace = simprof.TraceSession(prof, wait=1, warmup=0, active=2, repeat=1, dir=str(tmp_path))
    for _ in range(4):
        with prof.step():
            with prof.stage("physics"):
                pass
    assert trace.windows == 1 and trace.dropped == 0
    files = trace.files
    assert len(files) == 1 and files[0].endswith("rank0.json"), files
    with open(files[0], encoding="utf-8") as f:
        doc = json.load(f)
    names = [e.get("name", "") for e in doc["traceEvents"]]
    assert sum(n.startswith("ProfilerStep#") for n in names) == 2
    assert "physics" in names
    assert doc["schemaVersion"] and "distributedInfo" in doc


def test_background_session_writes_beside_the_loop(tmp_path):
    prof = quiet()
    trace = simprof.TraceSession(prof, wait=0, warmup=0, active=2, repeat=2, dir=str(tmp_path),
                                 background=True)
    for _ in range(4):
        with prof.step():
            with prof.stage("physics"):
                pass
    trace.wait()  # both windows written on the session's thread
    assert trace.windows == 2
    files = trace.files
    assert [os.path.basename(os.path.dirname(f)) for f in files] == [
        "simprof_trace_0", "simprof_trace_1"], files
    for path in files:
        with open(path, encoding="utf-8") as f:
            names = [e.get("name", "") for e in json.load(f)["traceEvents"]]
        assert sum(n.startswith("ProfilerStep#") for n in names) == 2


def test_cuda_handles_say_why_they_cannot_work():
    prof = quiet()
    trace = simprof.TraceSession(prof)
    if not simprof.has_cuda():
        with pytest.raises(simprof.Unavailable, match="without the CUDA backend"):
            simprof.KernelTracer(prof, trace)
        with pytest.raises(simprof.Unavailable):
            simprof.NvtxRanges(prof)
        return
    tracer = simprof.KernelTracer(prof, trace)  # no GPU or CUPTI held: disabled, with the reason
    assert tracer.enabled or tracer.reason
    tracer.close()
    simprof.NvtxRanges(prof).close()


def test_version():
    assert simprof.version() == "0.1.0"
    lib = os.environ.get("SIMPROF_LIBRARY") or os.path.join(os.path.dirname(simprof.__file__),
                                                             "libsimprof_c.so")
    assert os.path.exists(lib)


def test_timer_stats_from_an_array():
    stats = simprof.TimerStats(["solve", "forces"], n_envs=4)
    frame = [[1000, 2000, 3000, 40000], [10, 20, 30, 40]]  # ns; env 3 is the slow one
    try:
        import numpy
        frame = numpy.array(frame, dtype=numpy.uint64)
    except ImportError:
        pass
    stats.update(frame)
    stats.update(frame)
    assert stats.frames == 2
    a = stats.across_envs("solve")
    assert a["max"] == pytest.approx(40e-6) and a["min"] == pytest.approx(1e-6)
    assert stats.slowest("solve", 2) == [3, 2]
    assert "solve" in stats.plot("solve", width=60)
    assert stats.svg().lstrip().startswith("<svg") or "<svg" in stats.svg()
    with pytest.raises(simprof.InvalidArgument, match=r"shape \(1, 4\) \(expected \(2, 4\)\)"):
        stats.update([[1, 2, 3, 4]])
    with pytest.raises(simprof.InvalidArgument, match="no timer row 'nope'"):
        stats.across_envs("nope")
    with pytest.raises(simprof.InvalidArgument, match="ticks_per_second"):
        stats.update(frame, ticks_per_second=0)
