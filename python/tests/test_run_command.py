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
    pytest.skip("this package was built without the simprof command (no NVTX headers)",
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
    assert doc["schema"] == "simprof.run/1" and doc["steps"] == 19
