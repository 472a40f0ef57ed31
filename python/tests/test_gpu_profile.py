# SPDX-License-Identifier: MIT
"""simprof.GpuProfile, the one object for the GPU truth, and what the hand-wired pieces now say
instead of giving a wrong number in silence (issue 41): a torch loop eager and in a
torch.cuda.CUDAGraph, a kernel timer outrun by its host, eager stamps in a kernel tracer's trace."""
import math

import pytest

import simprof

from gpu_support import GPU, quiet, torch_on_gpu, warm_for_capture


def test_without_a_gpu_the_profile_names_what_failed():
    if GPU:
        pytest.skip("a GPU is visible: the profile works (the tests below)")
    prof = quiet()
    if not simprof.has_cuda():
        with pytest.raises(simprof.Unavailable, match="without the CUDA backend"):
            simprof.GpuProfile(prof)
        return
    with pytest.raises(simprof.CudaError, match="cudaStreamGetDevice failed"):
        simprof.GpuProfile(prof)


def _stages(prof, x):
    with prof.stage("physics"):
        for _ in range(20):
            x.mul_(1.0001)
    with prof.stage("sensors/Cam"):
        x.add_(1.0)


def test_one_object_times_an_eager_torch_loop_on_the_gpu(capfd):
    torch = torch_on_gpu()
    prof = simprof.StepProfiler(n_envs=1024, show_fps=True, interval_ms=1)
    gpu = simprof.GpuProfile(prof, stage_sample_every=2)
    with pytest.raises(simprof.LogicError, match="owns device tools already"):
        simprof.GpuProfile(prof)
    x = torch.zeros(1 << 22, device="cuda")
    for _ in range(40):
        with prof.step():
            _stages(prof, x)
    gpu.finish()
    c = gpu.counters()
    assert c["steps"] == 40 and c["stages_joined"] == 20, c
    assert c["stages_unstamped"] == 0 and c["stages_dropped"] == 0, c
    assert gpu.mean("physics") > gpu.mean("sensors/Cam") > 0
    assert math.isnan(gpu.mean("never"))
    report = gpu.report()
    assert "physics" in report and "sensors/Cam" in report and "20 sampled steps" in report
    out = capfd.readouterr()
    assert "GPU clock" in out.out + out.err, out  # the refused second profile left it alone
    gpu.close()
    prof.close()


def test_one_object_stamps_a_torch_cuda_graph_for_stages_and_kernels():
    torch = torch_on_gpu()
    if not hasattr(torch.cuda.CUDAGraph(), "raw_cuda_graph"):
        pytest.skip("this torch has no CUDAGraph.raw_cuda_graph()")
    prof = quiet()
    gpu = simprof.GpuProfile(prof, stage_sample_every=4, kernel_sample_every=8)
    x = torch.zeros(1 << 20, device="cuda")
    warm_for_capture(torch, x)
    g = torch.cuda.CUDAGraph(keep_graph=True)
    with prof.step(), gpu.capture(g):
        _stages(prof, x)
    for _ in range(64):
        with prof.step():
            gpu.replay(g)
    gpu.finish()
    c = gpu.counters()
    assert c["stages_joined"] >= 15 and c["stages_unstamped"] == 0, c
    assert c["kernel_replays"] >= 7 and c["kernel_dropped"] == 0, c
    assert gpu.mean("physics") > 0
    report = gpu.report()
    assert "Kernels of replayed graphs" in report and "physics" in report, report


def test_an_unpaced_kernel_timer_outrun_by_its_host_says_so(capfd):
    """Issue 41, case 3: no pacer, a ring of 2, the GPU held back by a long kernel: the replays
    the host cannot keep are counted and the warning says how to fix it, once."""
    torch = torch_on_gpu()
    if not hasattr(torch.cuda.CUDAGraph(), "raw_cuda_graph"):
        pytest.skip("this torch has no CUDAGraph.raw_cuda_graph()")
    prof = quiet()
    kernels = simprof.GraphKernelTimer(prof, sample_every=1, ring=2)
    x = torch.zeros(1 << 20, device="cuda")
    g = torch.cuda.CUDAGraph(keep_graph=True)
    with prof.step(), kernels.capture(g):
        with prof.stage("physics"):
            for _ in range(6):
                x.mul_(1.0001)
    torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time ahead of the replays
    for _ in range(30):
        with prof.step():
            kernels.replay(g)
    kernels.synchronize()
    assert kernels.counters()["dropped"] > 0
    out = capfd.readouterr()
    said = out.out + out.err
    assert said.count("sampled replays ahead of the GPU") == 1, said
    assert "pace the loop" in said


def test_eager_stamps_keep_a_kernel_tracers_trace_physical(tmp_path, capfd):
    """Issue 41, case 4: eager stamps between kernels that fill the GPU, in a kernel tracer's
    window: the session checks the trace it writes and says any break (none)."""
    torch = torch_on_gpu()
    prof = quiet()
    trace = simprof.TraceSession(prof, wait=1, active=4, dir=str(tmp_path))
    gpu = simprof.GpuProfile(prof, stage_sample_every=1, trace=trace)
    x = torch.zeros(30000 * 64, device="cuda")
    for _ in range(6):
        with prof.step():
            _stages(prof, x)
    gpu.finish()
    trace.wait()
    assert len(trace.files) == 1
    out = capfd.readouterr()
    assert "breaks the trace's causality" not in out.out + out.err, out
    with open(trace.files[0], encoding="utf-8") as f:
        assert "eager_stamp_kernel" in f.read()
