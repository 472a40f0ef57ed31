# SPDX-License-Identifier: MIT
"""simprof.cuda, MemoryTracker, collectives and closed handles: streams as Python users hold them,
bad input as InvalidArgument before anything reaches CUDA, CUDA's refusals with the call named,
and — where a GPU and torch are there — the pacer, the device stage timer (eager and inside a
torch.cuda.CUDAGraph), the stopwatch and the memory tracker on real work."""
import json
import math
import sys
import types

import pytest

import simprof

from gpu_support import GPU, quiet, torch_on_gpu, warm_for_capture


# --- streams ------------------------------------------------------------------------------------


class _WithCudaStream:
    def __init__(self, h):
        self.cuda_stream = h


class _WithPtr:
    def __init__(self, h):
        self.ptr = h


class _Protocol:
    def __init__(self, pair):
        self.pair = pair

    def __cuda_stream__(self):
        return self.pair


def test_stream_handle_takes_what_python_users_hold(monkeypatch):
    for name in ("torch", "warp", "cupy"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert simprof.stream_handle(None) == 0  # no framework imported: the legacy default stream
    assert simprof.stream_handle(0x1234) == 0x1234
    assert simprof.stream_handle(_WithCudaStream(77)) == 77  # torch and Warp streams
    assert simprof.stream_handle(_WithPtr(88)) == 88  # CuPy streams
    assert simprof.stream_handle(_Protocol((0, 99))) == 99  # the CUDA stream protocol
    # The framework in use answers None: its current stream.
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(
        is_available=lambda: True,
        current_stream=lambda: types.SimpleNamespace(cuda_stream=4242)))
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert simprof.stream_handle(None) == 4242
    monkeypatch.delitem(sys.modules, "torch")
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=types.SimpleNamespace(
        get_current_stream=lambda: types.SimpleNamespace(ptr=5151))))
    assert simprof.stream_handle(None) == 5151


@pytest.mark.parametrize("bad, says", [
    ("stream0", "stream = 'stream0' of type str"),
    (1.5, "of type float"),
    (True, "of type bool"),
    (-1, "handle -1"),
    (1 << 64, "expected 0 <= handle < 2\\*\\*64"),
    (_WithCudaStream("x"), "gave .cuda_stream = 'x'"),
    (_WithPtr(None), "gave .ptr = None"),
    (_Protocol((0,)), "__cuda_stream__ gave \\(0,\\)"),
    (_Protocol((0, -5)), "handle -5"),
])
def test_a_bad_stream_raises_naming_it(bad, says):
    with pytest.raises(simprof.InvalidArgument, match=says):
        simprof.stream_handle(bad)
    if not simprof.has_cuda():
        return
    # Refused before CUDA is asked: the same error with or without a GPU.
    prof = quiet()
    for make in (lambda: simprof.StepPacer(prof, bad), lambda: simprof.DeviceStageTimer(prof, bad),
                 lambda: simprof.Stopwatch(bad)):
        with pytest.raises(simprof.InvalidArgument, match=says):
            make()


def test_without_a_gpu_each_handle_names_what_failed():
    if GPU:
        pytest.skip("a GPU is visible: the handles work (the tests below)")
    prof = quiet()
    if not simprof.has_cuda():
        for make in (lambda: simprof.StepPacer(prof), lambda: simprof.DeviceStageTimer(prof),
                     lambda: simprof.Stopwatch(), lambda: simprof.MemoryTracker(prof)):
            with pytest.raises(simprof.Unavailable, match="without the CUDA backend"):
                make()
        return
    for make in (lambda: simprof.StepPacer(prof), lambda: simprof.DeviceStageTimer(prof),
                 lambda: simprof.Stopwatch()):
        with pytest.raises(simprof.CudaError, match="cudaStreamGetDevice failed"):
            make()
    # Counting allocations needs CUPTI, not a GPU: made, off, and it says why.
    mem = simprof.MemoryTracker(prof)
    with prof.step():
        with prof.stage("physics"):
            pass
    if not mem.enabled:
        assert mem.reason
    assert mem.total("physics") == {"allocs": 0, "alloc_bytes": 0, "frees": 0, "free_bytes": 0,
                                    "steps": 1}
    assert mem.total() == dict(mem.total("physics"))  # "step": the whole step
    assert mem.first_steady_allocation is None
    assert mem.allocs_per_step("never") == 0.0


def test_options_are_checked():
    with pytest.raises(simprof.InvalidArgument, match="clock = 'wall'"):
        simprof.Stopwatch(clock="wall")
    prof = quiet()
    with pytest.raises(simprof.InvalidArgument, match="ring = 0"):
        simprof.DeviceStageTimer(prof, 0, ring=0)
    if not simprof.has_cuda():
        return
    with pytest.raises(simprof.InvalidArgument, match="warmup_steps = -1"):
        simprof.MemoryTracker(prof, warmup_steps=-1)
    if GPU:
        with pytest.raises(simprof.InvalidArgument, match="sample_every = 0"):
            simprof.DeviceStageTimer(prof, sample_every=0)
        with pytest.raises(simprof.InvalidArgument, match="max_in_flight"):
            simprof.StepPacer(prof, max_in_flight=0)


# --- collectives --------------------------------------------------------------------------------


def test_a_collective_carries_kinetos_arguments_into_the_trace(tmp_path):
    prof = quiet()
    trace = simprof.TraceSession(prof, active=1, dir=str(tmp_path))
    group = simprof.ProcessGroup("7", "my_pg", [0, 1, 2, 3])
    with prof.step():
        with simprof.collective(prof, "all_reduce", 1 << 20, "torch.bfloat16", group):
            pass
        with simprof.collective(prof, "all_gather", 256, types.SimpleNamespace(name="float64"),
                                out_nelems=1024):
            pass
    trace.wait()
    with open(trace.files[0], encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    args = [e["args"] for e in events if "Collective name" in e.get("args", {})]
    assert len(args) == 2, events
    assert args[0]["Collective name"] == "allreduce"
    assert args[0]["In msg nelems"] == 1 << 20 and args[0]["dtype"] == "BFloat16"
    assert args[0]["Process Group Name"] == "7" and args[0]["Process Group Description"] == "my_pg"
    assert args[0]["Process Group Ranks"] == "[0, 1, 2, 3]" and args[0]["Group size"] == 4
    assert args[1]["Collective name"] == "allgather" and args[1]["dtype"] == "Double"
    assert args[1]["In msg nelems"] == 256 and args[1]["Out msg nelems"] == 1024
    assert args[1]["Process Group Name"] == "0"  # torch's default group


def test_a_bad_collective_raises_naming_the_value():
    prof = quiet()
    with pytest.raises(simprof.InvalidArgument, match="op 'all_sum' \\(expected one of allreduce"):
        with simprof.collective(prof, "all_sum", 8, "float32"):
            pass
    with pytest.raises(simprof.InvalidArgument, match="dtype 'complex64'"):
        with simprof.collective(prof, "all_reduce", 8, "complex64"):
            pass
    with pytest.raises(simprof.InvalidArgument, match="-8 elements in"):
        with simprof.collective(prof, "broadcast", -8, "Float"):
            pass
    with pytest.raises(simprof.InvalidArgument, match="group = 'world'"):
        with simprof.collective(prof, "all_reduce", 8, "Float", group="world"):
            pass
    with pytest.raises(simprof.InvalidArgument, match="world\\(0\\)"):
        simprof.ProcessGroup.world(0)
    assert simprof.ProcessGroup.world(3).ranks == [0, 1, 2]


# --- closed handles -----------------------------------------------------------------------------


def test_a_closed_object_says_it_is_closed(tmp_path):
    prof = quiet()
    trace = simprof.TraceSession(prof, dir=str(tmp_path))
    prof.close()  # closes what was made on it first: the C library never sees an orphan
    assert prof.closed and trace.closed
    with pytest.raises(simprof.LogicError, match="this StepProfiler is closed"):
        prof.begin_step()
    with pytest.raises(simprof.LogicError, match="this StepProfiler is closed"):
        with prof.step():
            pass
    with pytest.raises(simprof.LogicError, match="this TraceSession is closed"):
        trace.wait()
    with pytest.raises(simprof.LogicError, match="this StepProfiler is closed"):
        simprof.TraceSession(prof)
    prof.close()  # twice: nothing
    with simprof.RunningMean(window=2) as m:
        m.update(1.0)
    with pytest.raises(simprof.LogicError, match="this RunningMean is closed"):
        m.update(2.0)
    with pytest.raises(simprof.LogicError, match="closed"):
        with m:
            pass
    clock = simprof.ManualClock()
    timed = quiet(clock=clock)
    clock.close()  # the profiler reads the clock: it goes first
    assert timed.closed


# --- on a GPU, with torch -----------------------------------------------------------------------


def test_pacer_puts_the_fps_line_on_the_gpu_clock(capfd):
    torch = torch_on_gpu()
    prof = simprof.StepProfiler(n_envs=64, show_fps=True, interval_ms=1)
    pacer = simprof.StepPacer(prof, torch.cuda.current_stream(), max_in_flight=2, span_every=1)
    assert pacer.stream == torch.cuda.current_stream().cuda_stream
    x = torch.zeros(1 << 20, device="cuda")
    for _ in range(60):
        with prof.step():
            for _ in range(10):
                x.add_(1.0)
    pacer.finish()
    c = pacer.counters()
    assert c["steps"] == 60 and 1 <= c["most_in_flight"] <= 2, c
    d = pacer.device_steps()
    assert d["steps"] == 60 and d["periods"] == 59 and d["missed"] == 0, d
    assert 0 < d["mean_step_s"], d
    assert d["mean_period_s"] > 0, d
    assert pacer.mean_period_s == d["mean_period_s"]
    out = capfd.readouterr()
    assert "GPU clock" in out.out + out.err, out
    assert prof.fps > 0


def test_device_stage_times_of_an_eager_torch_loop(tmp_path):
    torch = torch_on_gpu()
    prof = quiet(stats_window=16)
    timer = simprof.DeviceStageTimer(prof, sample_every=1)
    x = torch.zeros(1 << 22, device="cuda")
    for _ in range(8):
        with prof.step():
            with prof.stage("physics"):
                for _ in range(20):
                    x.mul_(1.0001)
            with prof.stage("sensors/Cam"):
                x.add_(1.0)
    timer.synchronize()
    t = timer.device_timings
    assert {"physics", "sensors", "sensors/Cam", "step", "period"} <= set(t), t
    assert t["physics"] > 0 and t["sensors/Cam"] > 0
    assert t["physics"] + t["sensors"] <= t["step"] * 1.001, t  # stages fit in their step
    assert timer.joined == 8 and timer.dropped == 0
    assert timer.mean("physics") > timer.mean("sensors/Cam")  # 20 kernels against 1, same size
    assert math.isnan(timer.mean("never"))
    assert "physics" in timer.device_stage_table()
    # The record holds the device stages with their 8 samples, which compare reads.
    path = tmp_path / "run.json"
    prof.write_run_record(str(path), workload={"loop": "eager"}, device=timer)
    doc = json.loads(path.read_text())
    rows = {r["stage"]: r for r in doc["device"]["stages"]}
    assert doc["device"]["clock"] == "GPU" and len(rows["physics"]["samples_s"]) == 8, rows
    assert abs(rows["physics"]["mean_s"] - timer.mean("physics")) < 1e-12


def _captured_in_stages(prof, timer, x, physics_kernels):
    """A torch.cuda.CUDAGraph captured in one step through `timer` (its capture(g)):
    physics_kernels x.mul_ in "physics", one x.add_ in "sensors"."""
    import torch
    g = torch.cuda.CUDAGraph(keep_graph=True)
    with prof.step():
        with timer.capture(g):
            with prof.stage("physics"):
                for _ in range(physics_kernels):
                    x.mul_(1.0001)
            with prof.stage("sensors"):
                x.add_(1.0)
    return g


def test_device_stage_times_inside_a_torch_cuda_graph():
    torch = torch_on_gpu()
    if not hasattr(torch.cuda.CUDAGraph(), "raw_cuda_graph"):
        pytest.skip("this torch has no CUDAGraph.raw_cuda_graph()")
    prof = quiet()
    timer = simprof.DeviceStageTimer(prof, sample_every=4)
    x = torch.zeros(1 << 20, device="cuda")
    for _ in range(3):  # warm-up on a side stream, as torch's docs ask
        x.add_(1.0)
    torch.cuda.synchronize()
    g = _captured_in_stages(prof, timer, x, 30)
    stamped = g._simprof_stamped_DeviceStageTimer
    assert stamped.instrumented
    launched = [None]
    for _ in range(16):  # steps 1 .. 16: 4, 8, 12 and 16 are sampled
        with prof.step():
            launched.append(timer.replay(g))
    timer.synchronize()
    assert launched.count(True) == 4 and stamped.launches == 4, launched
    t = timer.device_timings
    assert t["physics"] > 0 and t["sensors"] > 0, t
    assert t["physics"] + t["sensors"] <= t["step"] * 1.001, t
    assert timer.dropped == 0 and timer.unpaired == 0
    with pytest.raises(simprof.InvalidArgument, match="not captured with this timer"):
        timer.replay(torch.cuda.CUDAGraph())
    # Without keep_graph torch keeps no graph to copy: said, not crashed.
    plain = torch.cuda.CUDAGraph()
    with pytest.raises(simprof.InvalidArgument, match="keep_graph=True"):
        with prof.step():
            with timer.capture(plain):
                x.add_(1.0)


def test_a_torch_graphs_kernels_carry_the_stage_they_were_captured_in(tmp_path):
    """Replayed, every kernel of a torch.cuda.CUDAGraph has the one cudaGraphLaunch's correlation;
    captured inside prof.stage(...) while the tracer exists, each also carries its stage."""
    torch = torch_on_gpu()
    prof = quiet(n_envs=1024)
    trace = simprof.TraceSession(prof, active=3, skip_first=1, dir=str(tmp_path))
    tracer = simprof.KernelTracer(prof, trace, kernels_only=True)
    if not tracer.enabled:
        pytest.skip("CUPTI is held by another tool here: " + tracer.reason)
    x = torch.ones(1024, device="cuda")
    warm_for_capture(torch, x)
    graph = torch.cuda.CUDAGraph()
    with prof.step(), prof.stage("physics"):  # step 0: captured, not traced (skip_first)
        with torch.cuda.graph(graph):
            with prof.stage("physics/forces"):
                for _ in range(3):
                    x.mul_(1.0001)
            with prof.stage("physics/contacts"):
                for _ in range(2):
                    x.add_(1.0)
    for _ in range(3):
        with prof.step(), prof.stage("physics"):
            graph.replay()
    torch.cuda.synchronize()
    trace.wait()
    files = trace.files
    tracer.close()
    trace.close()
    assert len(files) == 1
    with open(files[0], encoding="utf-8") as f:
        kernels = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"]
    stages = {}
    for e in kernels:
        assert "graph id" in e["args"] and "graph node id" in e["args"], e
        stages[e["args"].get("stage")] = stages.get(e["args"].get("stage"), 0) + 1
    assert stages == {"physics/forces": 9, "physics/contacts": 6}


_KERNEL_TIMER_SCRIPT = r"""
import sys
import torch
import simprof
hold = sys.argv[1] == "hold"
prof = simprof.StepProfiler(n_envs=0, show_fps=False)
kernels = simprof.GraphKernelTimer(prof, sample_every=4)  # steps 0, 4, 8, ...
assert kernels.counters()["hop_ns"] > 0
x = torch.zeros(1 << 20, device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    x.mul_(1.0001).add_(1.0)  # torch's warm-up before a capture
torch.cuda.current_stream().wait_stream(side)
g = torch.cuda.CUDAGraph(keep_graph=True)
with prof.step():  # step 0: sampled, but no copy exists yet (missed)
    with kernels.capture(g):
        with prof.stage("physics"):
            for _ in range(3):
                x.mul_(1.0001)
        with prof.stage("sensors"):
            x.add_(1.0)
launched = []
if hold:  # torch.profiler holds CUPTI (for the rest of the process: Kineto keeps it)
    from torch.profiler import ProfilerActivity, profile
    held = profile(activities=[ProfilerActivity.CUDA])
    held.__enter__()
for _ in range(16):  # steps 1 .. 16: 4, 8, 12 and 16 run the stamped copy
    with prof.step():
        launched.append(kernels.replay(g))
torch.cuda.synchronize()
if hold:
    held.__exit__(None, None, None)
    names = {e.name for e in held.events()}
    assert any("node_stamp_kernel" in n for n in names), sorted(names)[:20]
kernels.synchronize()
c = kernels.counters()
assert launched.count(True) == 4, launched
assert (c["replays"], c["missed"], c["dropped"], c["unstamped"]) == (4, 1, 0, 0), c
timed = [n for n in kernels.nodes() if n["kernel"]]
assert [n["stage"] for n in timed] == ["physics"] * 3 + ["sensors"], timed
for n in timed:
    assert n["count"] == 4 and 0 < n["min_s"] <= n["mean_s"] <= n["max_s"] < 1e-3, n
    assert "elementwise" in n["name"] and n["graph_id"] and n["node_id"], n
table = kernels.kernel_table()
assert "physics" in table and "sensors" in table, table
print("ok", c)
"""


@pytest.mark.parametrize("cupti", ["free", "hold"])
def test_every_kernel_of_a_torch_graph_is_timed_without_cupti(cupti):
    """GraphKernelTimer: a stamped copy of the torch graph on sampled steps, each kernel named and
    placed in its stage; with torch.profiler holding CUPTI meanwhile ("hold"), the same. In a
    process of its own: torch's profiler keeps CUPTI for the rest of the process."""
    torch_on_gpu()
    import os
    import subprocess
    import torch
    if not hasattr(torch.cuda.CUDAGraph(), "raw_cuda_graph"):
        pytest.skip("this torch has no CUDAGraph.raw_cuda_graph()")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(simprof.__file__)),
                                        env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", _KERNEL_TIMER_SCRIPT, cupti], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr


def test_a_trace_window_shows_every_kernel_of_a_torch_graph(tmp_path):
    """GraphKernelTimer joined to a TraceSession: every step of the window runs the stamped copy
    (the default sampling takes none of these steps) and each kernel is a device span of the
    window's trace, on the GPU's process and the stream's row, with its stage and graph ids."""
    torch = torch_on_gpu()
    if not hasattr(torch.cuda.CUDAGraph(), "raw_cuda_graph"):
        pytest.skip("this torch has no CUDAGraph.raw_cuda_graph()")
    import json
    prof = quiet()
    trace = simprof.TraceSession(prof, wait=2, active=2, dir=str(tmp_path))
    kernels = simprof.GraphKernelTimer(prof, trace=trace)
    x = torch.zeros(1 << 20, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        x.mul_(1.0001).add_(1.0)
    torch.cuda.current_stream().wait_stream(side)
    g = _captured_in_stages(prof, kernels, x, 3)  # step 0
    for _ in range(4):  # steps 1 .. 4: the window is steps 2 and 3
        with prof.step():
            kernels.replay(g)
    trace.wait()
    assert trace.windows == 1 and len(trace.files) == 1
    with open(trace.files[0]) as f:
        j = json.load(f)
    ks = [e for e in j["traceEvents"] if e.get("cat") == "kernel"]
    assert len(ks) == 2 * 4, [e["name"] for e in ks]
    assert all(e["pid"] == 0 and e["tid"] == e["args"]["stream"] for e in ks), ks[0]
    stages = sorted(e["args"]["stage"] for e in ks)
    assert stages == ["physics"] * 6 + ["sensors"] * 2, stages
    assert all(e["args"]["graph node id"] > 0 and e["dur"] > 0 for e in ks), ks[0]
    replays = sorted({e["args"]["correlation"] for e in ks})
    assert len(replays) == 2
    # On the trace's clock: after the window's first step began on the host (the launch comes
    # later), the first replay's kernels all before the second's, one stream's kernels never
    # overlapping.
    steps = sorted(e["ts"] for e in j["traceEvents"]
                   if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#"))
    assert ks and min(e["ts"] for e in ks) >= steps[0] - 5.0, (steps, ks[0])
    first = [e for e in ks if e["args"]["correlation"] == replays[0]]
    second = [e for e in ks if e["args"]["correlation"] == replays[1]]
    assert max(e["ts"] + e["dur"] for e in first) <= min(e["ts"] for e in second)
    ordered = sorted(ks, key=lambda e: e["ts"])
    for a_, b_ in zip(ordered, ordered[1:]):
        assert a_["ts"] + a_["dur"] <= b_["ts"] + 1e-3, (a_, b_)
    assert "stamped replays as device spans" in j["otherData"]["graph_kernel_timer"]
    kernels.close()
    trace.close()


def test_stopwatch_times_a_section_on_the_gpu():
    torch = torch_on_gpu()
    x = torch.zeros(1 << 22, device="cuda")
    watch = simprof.Stopwatch()
    assert watch.clock_label == "CUDA events"
    with pytest.raises(simprof.LogicError):
        watch.stop()
    with watch.lap():
        for _ in range(10):
            x.add_(1.0)
    assert watch.laps == 1 and watch.last_s > 0 and watch.total_s == watch.mean_s == watch.last_s
    assert watch.time(lambda: x.add_(1.0)) > 0 and watch.laps == 2
    watch.reset()
    assert watch.laps == 0 and watch.total_s == 0
    drained = simprof.Stopwatch(clock="host_drained")
    assert drained.clock_label == "host clock, stream drained"
    assert drained.time(torch.cuda.synchronize) >= 0


def test_memory_tracker_counts_torchs_allocations():
    torch = torch_on_gpu()
    prof = quiet()
    mem = simprof.MemoryTracker(prof, warmup_steps=1)
    assert mem.enabled, mem.reason
    keep = []
    for i in range(3):
        with prof.step():
            with prof.stage("physics"):
                if i == 2:  # after the warm-up: a size torch's cache cannot serve
                    keep.append(torch.empty(64 << 20, dtype=torch.uint8, device="cuda"))
    assert mem.total("physics")["allocs"] >= 1 and mem.total("physics")["steps"] == 3
    assert mem.total("physics")["alloc_bytes"] >= 64 << 20
    first = mem.first_steady_allocation
    assert first is not None and first["step"] == 2 and first["stage"] == "physics", first
    assert mem.peak_bytes >= 64 << 20


def test_a_stream_object_lives_as_long_as_what_uses_it():
    # CUDA cannot be asked about a destroyed stream (cudaStreamGetDevice reads the freed stream and
    # may crash), so a stream object handed to simprof is held until the handle is closed.
    torch = torch_on_gpu()
    import gc
    import weakref

    class Owner:  # a framework's stream object (CuPy's and Warp's are destroyed when collected)
        def __init__(self):
            self.stream = torch.cuda.Stream()
            self.cuda_stream = self.stream.cuda_stream

    for make in (lambda s: simprof.StepPacer(quiet(), s), lambda s: simprof.Stopwatch(s),
                 lambda s: simprof.DeviceStageTimer(quiet(), s)):
        owner = Owner()
        gone = weakref.ref(owner)
        h = make(owner)
        del owner
        gc.collect()
        assert gone() is not None, "the stream object went while %r used it" % (h,)
        h.close()
        gc.collect()
        assert gone() is None, "the stream object was kept after %r was closed" % (h,)


def test_a_stream_of_another_device_is_refused():
    torch = torch_on_gpu()
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs (nvidia-h200-x2)")
    other = torch.cuda.Stream(device=1)
    with pytest.raises(simprof.InvalidArgument, match="on device 1 but device 0 is current"):
        simprof.StepPacer(quiet(), other)
