# SPDX-License-Identifier: MIT
"""The simprof Python package over the C API: Genesis's timings, the FPS line, RunningMean, traces,
the CUDA backend's handles, and bad input raised as Python exceptions with simprof's message."""
import json
import math
import os

import pytest

import simprof

from gpu_support import quiet


def test_timings_follow_genesis():
    clock = simprof.ManualClock()
    prof = quiet(n_envs=8, clock=clock)
    with prof.step():
        with prof.stage("physics"):
            clock.advance(0.002)
        with prof.stage("sensors/Cam"):
            clock.advance_ns(1_000_000)
    t = prof.timings
    assert set(t) == {"physics", "sensors", "sensors/Cam", "step"}, t  # no period on the first step
    assert t["physics"] == pytest.approx(0.002, abs=1e-15)  # seconds, from the clock's nanoseconds
    assert t["sensors/Cam"] == pytest.approx(0.001, abs=1e-15)
    assert t["sensors"] == t["sensors/Cam"]  # a sensor class rolls up into "sensors"
    assert t["step"] == pytest.approx(0.003, abs=1e-15)
    clock.advance(0.001)  # between the steps
    with prof.step():
        with prof.stage("physics"):
            clock.advance(0.0005)
    t = prof.timings
    assert set(t) == {"physics", "step", "period"}, t  # a stage that did not run is absent
    assert t["period"] == pytest.approx(0.004, abs=1e-15)  # start to start
    assert prof.timing("physics") == t["physics"] == pytest.approx(0.0005, abs=1e-15)
    assert prof.steps == 2
    assert clock.now_ns == 4_500_000


def test_manual_clock_refuses_to_run_backwards():
    clock = simprof.ManualClock()
    with pytest.raises(simprof.InvalidArgument, match=r"advance_ns = -5"):
        clock.advance_ns(-5)
    assert clock.now_ns == 0
    with pytest.raises(simprof.InvalidArgument, match="ManualClock"):
        simprof.StepProfiler(clock="not a clock")


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
    clock = simprof.ManualClock()
    prof = quiet(clock=clock)

    @prof.staged("physics")
    def physics(x):
        clock.advance(0.002)
        return x + 1

    @prof.stepped
    def step(x):
        clock.advance(0.001)
        return physics(x)

    assert step(1) == 2
    assert step(2) == 3
    assert prof.steps == 2  # each call of the stepped function is one step
    t = prof.timings
    assert t["physics"] == pytest.approx(0.002, abs=1e-15)
    assert t["step"] == pytest.approx(0.003, abs=1e-15)
    assert t["period"] == pytest.approx(0.003, abs=1e-15)


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


def test_fps_line_callback_and_switch(capfd):
    clock = simprof.ManualClock()
    seen = []
    prof = simprof.StepProfiler(n_envs=1000, show_fps=True, interval_ms=50, clock=clock,
                                fps_callback=lambda total, per_env, n: seen.append((total, n)))

    def run(steps):
        for _ in range(steps):
            with prof.step():
                clock.advance(0.002)  # 1,000 envs every 2 ms: 500,000 env-steps per second

    run(100)
    prof.flush_fps()
    assert seen and all(n == 1000 and total == pytest.approx(5e5, rel=1e-12) for total, n in seen)
    assert prof.fps == pytest.approx(5e5, rel=1e-12)
    assert prof.fps_per_env == pytest.approx(500.0, rel=1e-12)
    line = "Running at 500,000.00 FPS (500.00 FPS per env, 1000 envs)."
    out = capfd.readouterr()
    assert line in out.out + out.err
    prof.set_show_fps(False)  # the line stops; the callback goes on
    prof.set_fps_callback(None)  # and now the callback stops too
    before = len(seen)
    run(100)
    prof.flush_fps()
    assert len(seen) == before
    out = capfd.readouterr()
    assert "Running at" not in out.out + out.err
    assert math.isnan(quiet().fps)


def test_reset_fps_starts_the_line_afresh():
    # A slow warm-up (10 ms steps) and then the steady rate (2 ms steps): without a reset the EMA
    # (alpha 0.95) still remembers the warm-up; after reset_fps() the line is the steady rate alone.
    clock = simprof.ManualClock()
    prof = quiet(n_envs=1000, interval_ms=50, clock=clock)
    for dt, steps in ((0.010, 20), (0.002, 100)):
        for _ in range(steps):
            with prof.step():
                clock.advance(dt)
        if dt == 0.010:
            prof.flush_fps()
            assert prof.fps == pytest.approx(1e5, rel=1e-12)
            prof.reset_fps()
            assert math.isnan(prof.fps)
    prof.flush_fps()
    assert prof.fps == pytest.approx(5e5, rel=1e-12)


def test_running_mean():
    m = simprof.RunningMean(window=3)
    assert math.isnan(m.update(1.0))  # not full yet
    m.update(2.0)
    assert m.update(3.0) == pytest.approx(2.0)
    assert m.update(4.0) == pytest.approx(3.0)
    assert m.count == 4
    e = simprof.RunningMean(alpha=0.5)  # ema = alpha * ema + (1 - alpha) * x, seeded by x
    assert e.update(2.0) == pytest.approx(2.0)
    assert e.update(4.0) == pytest.approx(3.0)
    assert e.update(6.0) == pytest.approx(4.5)
    assert e.count == 3


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
    if simprof.has_cuda():
        pytest.skip("built with the CUDA backend: the handles exist (test_a_kernel_reaches_the_trace)")
    prof = quiet()
    trace = simprof.TraceSession(prof)
    with pytest.raises(simprof.Unavailable, match="without the CUDA backend"):
        simprof.KernelTracer(prof, trace)
    with pytest.raises(simprof.Unavailable):
        simprof.NvtxRanges(prof)


def test_a_kernel_reaches_the_trace(tmp_path):
    """On a GPU (torch launches the kernels): the tracer is on, and the window's kernels are in the
    file, possible ones (otherData.causality)."""
    if not simprof.has_cuda():
        pytest.skip("built without the CUDA backend")
    torch = pytest.importorskip("torch", reason="torch launches the kernels")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible")
    prof = quiet()
    trace = simprof.TraceSession(prof, wait=1, warmup=0, active=2, repeat=1, dir=str(tmp_path))
    tracer = simprof.KernelTracer(prof, trace)
    assert tracer.enabled, tracer.reason
    x = torch.zeros(4096, device="cuda")
    for _ in range(4):  # step 0 waits, 1-2 are traced, 3 is after the window
        with prof.step():
            for _ in range(3):
                x.add_(1.0)
            torch.cuda.synchronize()
    trace.wait()
    with open(trace.files[0], encoding="utf-8") as f:
        doc = json.load(f)
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    assert len(kernels) == 6, [k["name"] for k in kernels]
    assert doc["otherData"]["causality"].startswith("ok: 6 device spans"), doc["otherData"]
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


def test_a_failed_step_end_leaves_the_profiler_usable():
    # end_step() with a stage still open raises, and the step is dropped like a vetoed one: the same
    # profiler goes on (a notebook user who caught the error needs no new one).
    prof = quiet()
    prof.begin_step()
    prof.begin_stage("a")
    with pytest.raises(simprof.LogicError, match="'a' is still open.*dropped"):
        prof.end_step()
    assert prof.timings == {}
    with prof.step():
        with prof.stage("a"):
            pass
    assert "a" in prof.timings


def test_write_run_record_names_a_device_that_is_not_a_stage_timer(tmp_path):
    prof = simprof.StepProfiler(n_envs=1, show_fps=False, stats_window=10)
    with prof.step():
        pass
    with pytest.raises(simprof.InvalidArgument, match="device = 'gpu'.*DeviceStageTimer"):
        prof.write_run_record(str(tmp_path / "r.json"), device="gpu")
    assert not (tmp_path / "r.json").exists()
