# SPDX-License-Identifier: MIT
"""``python -m simprof run``: the simprof command bundled with the package, on a program that knows
nothing of simprof (tests/run/nvtx_program, given by ctest as SIMPROF_NVTX_PROGRAM)."""
import os
import subprocess
import sys

import pytest

from simprof.__main__ import command_path

# ctest sets SIMPROF_EXPECT_RUN where the build has the command: then its absence is a failure.
if command_path() is None and not os.environ.get("SIMPROF_EXPECT_RUN"):
    pytest.skip("this package was built without the simprof command (no nlohmann_json)",
                allow_module_level=True)


def simprof(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "simprof", *args], capture_output=True,
                          text=True, timeout=timeout)


def test_the_command_is_bundled_and_answers_help():
    assert command_path() is not None, "the simprof command is not beside the package's library"
    p = simprof("run", "--help")
    assert p.returncode == 0, p.stderr
    assert "usage: simprof run" in p.stderr


def test_bad_input_is_refused_by_name():
    p = simprof("run", "--n-envs", "many", "--", "true")
    assert p.returncode == 2
    assert "--n-envs 'many' (expected a whole number >= 0)" in p.stderr


def test_a_program_nobody_changed_is_profiled(tmp_path):
    program = os.environ.get("SIMPROF_NVTX_PROGRAM")
    if not program:
        pytest.skip("SIMPROF_NVTX_PROGRAM (tests/run/nvtx_program) not given: run through ctest")
    record = tmp_path / "run.json"
    p = simprof("run", "--no-fps", "--json", str(record), "--", program, "20")
    assert p.returncode == 3, p.stderr  # nvtx_program's own exit status
    assert '19 steps of the NVTX range "step"' in p.stderr
    import json
    doc = json.loads(record.read_text())
    assert doc["schema"] == "simprof.run/2" and doc["steps"] == 19


def _record(path, contacts_us, seed, workload=None):
    import random

    import simprof as sp
    clock = sp.ManualClock()
    prof = sp.StepProfiler(n_envs=64, show_fps=False, stats_window=1000, interval_ms=1,
                           clock=clock)
    rng = random.Random(seed)
    for _ in range(300):
        with prof.step():
            with prof.stage("physics"):
                clock.advance(contacts_us * 1e-6 * rng.gauss(1, 0.01))
            with prof.stage("sensors"):
                clock.advance(50e-6 * rng.gauss(1, 0.01))
    prof.write_run_record(str(path), workload=workload or {"scene": "spheres"})


def test_compare_finds_a_slower_stage_in_records_written_from_python(tmp_path):
    base, same, slow, other = (tmp_path / n for n in ("b.json", "s.json", "w.json", "o.json"))
    _record(base, 100, 1)
    _record(same, 100, 2)
    _record(slow, 105, 3)
    _record(other, 100, 4, {"scene": "go2"})
    p = simprof("compare", str(base), str(same))
    assert p.returncode == 0, p.stdout + p.stderr
    p = simprof("compare", "--json", "-", str(base), str(slow))
    assert p.returncode == 1, p.stdout + p.stderr
    import json
    rows = {r["stage"]: r for r in json.loads(p.stdout)["comparisons"][0]["runs"][0]["rows"]}
    assert rows["physics"]["verdict"] == "slower" and rows["sensors"]["verdict"] == "no change"
    p = simprof("compare", str(base), str(other))
    assert p.returncode == 2 and "not comparable: workload" in p.stdout, p.stdout
    p = simprof("compare", str(base), str(tmp_path / "missing.json"))
    assert p.returncode == 2 and "missing.json: cannot be read" in p.stderr, p.stderr


def test_torch_profiler_in_the_program_outlives_the_sampled_windows(tmp_path):
    """A torch loop whose own torch.profiler records the very steps simprof run samples, through
    the launch hook: both finish with their figures. torch.profiler once stopped on a duplicate
    flow, when the events simprof records at a launch were runtime calls nested in the program's
    runtime launch."""
    from gpu_support import torch_on_gpu
    torch_on_gpu()
    loop = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python", "nvtx_loop.py")
    record = tmp_path / "run.json"
    p = simprof("run", "--gpu", "--gpu-launches", "hook", "--gpu-every", "8", "--gpu-interval",
                "0", "--step", "step", "--no-fps", "--json", str(record), "--", sys.executable,
                loop, "--steps", "64", "--kernels", "10", "--kernel-truth", "8")
    assert p.returncode == 0, p.stdout + p.stderr
    import json
    out = json.loads(p.stdout.strip().splitlines()[-1])
    # Steps 6 and 7 of each 8 of 64: 16 steps, recorded by torch.profiler and sampled by simprof.
    assert (out["kernel_steps"], out["kernel_cycles_short"], out["kernel_cycles_misaligned"]) == \
        (16, 0, 0), out
    device = json.loads(record.read_text())["device"]
    assert (device["launches"], device["sampled_steps"]) == ("hook", 16), device
