#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""nvtx_loop.py --ab's arithmetic, with a stand-in torch (no GPU): every other block of steps runs
without its ranges, and ab_ratio() is the ranged blocks' period over their neighbours'.

  check_ab.py EXAMPLES_PYTHON_DIR
"""
import contextlib
import importlib.util
import os
import sys
import types

clock = [0.0]  # the stand-in device clock: each kernel run adds 1, each range 0.1
pushed = []    # the step index of every "step" range pushed


class Event:
    def record(self):
        self.t = clock[0]

    def elapsed_time(self, later):
        return later.t - self.t


@contextlib.contextmanager
def nvtx_range(name):
    clock[0] += 0.1
    if name == "step":
        pushed.append(step[0])
    yield


torch = types.ModuleType("torch")
torch.cuda = types.SimpleNamespace(nvtx=types.SimpleNamespace(range=nvtx_range))
sys.modules["torch"] = torch
spec = importlib.util.spec_from_file_location(
    "nvtx_loop", os.path.join(sys.argv[1], "nvtx_loop.py"))
nvtx_loop = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nvtx_loop)

failures = []


def expect(what, cond):
    if not cond:
        failures.append(what)


step = [0]
n, steps = 4, 40
marks = [[Event() for _ in range(4)] for _ in range(steps)]


def kernels():
    clock[0] += 1.0
    if kernels.calls % 3 == 2:
        step[0] += 1
    kernels.calls += 1


kernels.calls = 0
step[0] = 0
nvtx_loop.loop(types.SimpleNamespace(steps=steps, ab=n), [kernels] * 3, marks)
# Blocks of 4 steps alternate: 0-3 ranged, 4-7 not, 8-11 ranged, ...
expect("ranged blocks are the even ones: %s" % pushed,
       pushed == [i for i in range(steps) if (i // n) % 2 == 0])
# A ranged step: 3 kernels and 5 ranges (3.5); an unranged one: 3.0.
ratio = nvtx_loop.ab_ratio(marks, n)
expect("ab_ratio %.4f is 3.5 / 3.0" % ratio, abs(ratio - 3.5 / 3.0) < 1e-9)
# Without --ab every step is ranged.
pushed.clear()
step[0] = kernels.calls = 0
nvtx_loop.loop(types.SimpleNamespace(steps=8, ab=0), [kernels] * 3, marks)
expect("without --ab every step is ranged: %s" % pushed, pushed == list(range(8)))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("nvtx_loop --ab: checked")
