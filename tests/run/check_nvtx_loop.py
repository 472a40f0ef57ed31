#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""nvtx_loop.py's arithmetic, with a stand-in torch (no GPU):
- --ab: every other block of steps runs without its ranges, and ab_ratio() is the ranged blocks'
  period over their neighbours';
- --kernel-truth: a recorded cycle's kernels as its last two steps' stage spans, a cycle that ends
  off the sampled steps counted, and the loop's own events on the steps simprof run samples.

  check_nvtx_loop.py EXAMPLES_PYTHON_DIR
"""
import contextlib
import importlib.util
import os
import random
import sys
import types

clock = [0.0]  # the stand-in device clock: each kernel run adds 1, each range 0.1
pushed = []    # the step index of every "step" range pushed


class Event:
    def __init__(self, t=0.0):
        self.t = t

    def record(self):
        self.t = clock[0]

    def elapsed_time(self, later):  # ms
        return later.t - self.t


@contextlib.contextmanager
def nvtx_range(name):
    clock[0] += 0.1
    if name == "step":
        pushed.append(step[0])
    yield


CUDA, CPU = "cuda", "cpu"
torch = types.ModuleType("torch")
torch.cuda = types.SimpleNamespace(nvtx=types.SimpleNamespace(range=nvtx_range))
torch.autograd = types.SimpleNamespace(DeviceType=types.SimpleNamespace(CUDA=CUDA, CPU=CPU))
sys.modules["torch"] = torch
spec = importlib.util.spec_from_file_location(
    "nvtx_loop", os.path.join(sys.argv[1], "nvtx_loop.py"))
nvtx_loop = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nvtx_loop)

failures = []


def expect(what, cond):
    if not cond:
        failures.append(what)


# ---- --ab ----------------------------------------------------------------------------------------
step = [0]
n, steps = 4, 40
marks = [[Event() for _ in range(4)] for _ in range(steps)]


def kernels():
    clock[0] += 1.0
    if kernels.calls % 3 == 2:
        step[0] += 1
    kernels.calls += 1


kernels.calls = 0
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

# ---- --kernel-truth ------------------------------------------------------------------------------
# Steps of 3 + 2 + 1 kernels, 500 ns between kernels; a warm-up step's kernels (2,000 ns long) run
# inside the recording before the two recorded steps' (1,000 ns long).
counts = (3, 2, 1)
cycle = []
for s in range(3):
    t, length = s * 100_000, 2_000 if s == 0 else 1_000
    for _ in range(sum(counts)):
        cycle.append((t, t + length))
        t += length + 500
random.Random(1).shuffle(cycle)  # the records' order is not the kernels'
spans = nvtx_loop.stage_spans(cycle, counts)
# physics: 3 kernels, first start to last end = 2 * 1,500 + 1,000 ns = 4 us; sensors 2.5; rewards 1
# (the warm-up step's would be 7, 4.5 and 2).
want = {"physics": 4.0, "sensors": 2.5, "rewards": 1.0}
expect("two steps, the warm-up left out: %s" % spans, spans is not None and len(spans) == 2 and all(
    all(abs(got[k] - v) < 1e-9 for k, v in want.items()) for got in spans))
expect("too few kernels is no cycle",
       nvtx_loop.stage_spans(cycle[:2 * sum(counts) - 1], counts) is None)
# One stage's last kernel ends after the next began: the span is to the latest end.
over = [(0, 1_000), (100, 9_000), (200, 1_500), (10_000, 11_000), (11_000, 12_000),
        (12_000, 13_000)]
got = nvtx_loop.stage_spans(over + [(a + 50_000, b + 50_000) for a, b in over], counts)
expect("physics to its latest end: %s" % got, got is not None and abs(got[0]["physics"] - 9.0)
       < 1e-9)


class KinetoEvent:  # what torch.profiler's results hold, as nvtx_loop reads them
    def __init__(self, name, device, start, end):
        self._name, self._device, self._start, self._end = name, device, start, end

    def name(self):
        return self._name

    def device_type(self):
        return self._device

    def start_ns(self):
        return self._start

    def duration_ns(self):
        return self._end - self._start


def profile(step_num, events):
    results = types.SimpleNamespace(events=lambda: events)
    return types.SimpleNamespace(step_num=step_num,
                                 profiler=types.SimpleNamespace(kineto_results=results))


ours = [KinetoEvent("void at::native::vectorized_elementwise_kernel<4>", CUDA, a, b)
        for a, b in cycle]
others = [KinetoEvent("ProfilerStep#6", CUDA, 100_000, 300_000),  # a GPU annotation over the steps
          KinetoEvent("cudaLaunchKernel", CPU, 10, 20), KinetoEvent("Memset (Device)", CUDA, 5, 6)]
truth = nvtx_loop.KernelTruth(counts, 8)
truth.cycle(profile(8, others + ours))    # the step() after step 7: where a cycle ends
truth.cycle(profile(12, ours))            # anywhere else: counted
truth.cycle(profile(16, ours[:5] + others))  # too few kernels: counted
r = truth.result()
expect("kernel truth %s" % r, r["kernel_steps"] == 4 and r["kernel_cycles_misaligned"] == 1 and
       r["kernel_cycles_short"] == 1 and r["kernel_extra"] == 2 * sum(counts) and
       all(abs(r["kernel_stage_us"][k] - v) < 1e-9 for k, v in want.items()))

# The loop's events: step i's stages take i, 2i and 3i ms; the median over steps 6, 7, 14 and 15
# of 8 (the steps simprof run samples with --gpu-every 8) is 10.5 ms for physics.
marks = [[Event(0), Event(i), Event(3 * i), Event(6 * i)] for i in range(16)]
got = nvtx_loop.sampled_event_spans(marks, 8)
expect("sampled events %s" % got, got == {"physics": 10.5e3, "sensors": 21e3, "rewards": 31.5e3})
got = nvtx_loop.sampled_event_spans(marks[:6], 8)  # no step sampled: NaN, no error
expect("no sampled step %s" % got, all(v != v for v in got.values()))

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("nvtx_loop --ab and --kernel-truth: checked")
