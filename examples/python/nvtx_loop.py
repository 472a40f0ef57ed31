#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A torch step loop that knows nothing of simprof: NVTX ranges around its step and stages, as
simulators mark theirs, and CUDA events at every step's end to time itself. `simprof run` profiles
it unchanged (run_bench.py compares the two).

    python3 nvtx_loop.py [--n-envs 1024] [--kernels 100] [--graph] [--steps 2000] [--torch-profiler]
        [--ab N] [--kernel-truth N]

The step: K elementwise kernels (x.add_(0.5) over n_envs x 64 floats) in "physics" (60 %),
"sensors" > "Cam" (25 %) and "rewards" (the rest), on the current stream, never synchronised
inside the loop; with --graph the three stages are three captured torch.cuda.CUDAGraphs, each
replayed inside its range. Prints one JSON line: the mean device period from step 63 on and the
stage spans over the second half, from the events (one before physics, one after each stage),
and the host's period over the second half.

With --ab N the steps come in blocks of N, every other block without its NVTX ranges: under
simprof run those blocks cost the tool nothing, so within one process, block against neighbouring
block, the ranged blocks' device period over the others' is the ranges' cost ("ab_ratio", the
median over pairs of blocks after the first 2). Run alone, the same ratio is what the ranges cost
without a tool (about 1). Separate processes of an eager loop spread far more than this.

With --kernel-truth N, CUPTI (torch.profiler, CUDA activity only) records the kernels of the 2
steps in every N that `simprof run --gpu --gpu-every N --gpu-interval 0 --step step` samples
(steps N-2 and N-1 of each N, counting from 0), and the JSON line adds each stage's kernel span
on those steps (its first kernel's start to its last kernel's end; "sensors" is Cam's kernels),
the median over the steps, beside the loop's own events on the same steps.
"""
import argparse
import contextlib
import json
import statistics
import time

import torch


def split(kernels):
    a = max(1, round(kernels * 0.60))
    b = max(1, round(kernels * 0.25))
    return (a, b, max(1, kernels - a - b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-envs", type=int, default=1024)
    ap.add_argument("--kernels", type=int, default=100)
    ap.add_argument("--graph", action="store_true")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--torch-profiler", action="store_true",
                    help="the loop inside torch.profiler.profile (CPU and CUDA activities, every "
                         "step traced, the trace kept in memory): its cost, for comparison")
    ap.add_argument("--ab", type=int, default=0,
                    help="blocks of N steps, every other one without NVTX ranges (in-process A/B)")
    ap.add_argument("--kernel-truth", type=int, default=0, metavar="N",
                    help="CUPTI's kernel spans of each stage on steps N-2 and N-1 of every N")
    a = ap.parse_args()
    if a.kernel_truth and (a.kernel_truth < 4 or a.torch_profiler or a.ab):
        ap.error("--kernel-truth %d: expected N >= 4, without --torch-profiler and --ab"
                 % a.kernel_truth)
    x = torch.zeros(a.n_envs, 64, device="cuda")
    counts = split(a.kernels)

    def body(n):
        for _ in range(n):
            x.add_(0.5)

    graphs = None
    if a.graph:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            body(3)  # warm-up outside the capture
        torch.cuda.current_stream().wait_stream(s)
        graphs = []
        for n in counts:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                body(n)
            graphs.append(g)
    run = [(lambda i=i: graphs[i].replay()) if graphs else (lambda n=n: body(n))
           for i, n in enumerate(counts)]
    # Events before physics and after each stage: the stages' device spans and the step ends.
    marks = [[torch.cuda.Event(enable_timing=True) for _ in range(4)] for _ in range(a.steps)]
    torch.cuda.synchronize()
    profiler = contextlib.nullcontext()
    truth = KernelTruth(counts, a.kernel_truth) if a.kernel_truth else None
    if a.torch_profiler:
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        profiler = torch.profiler.profile(activities=acts)
    elif truth:  # recording the steps simprof run samples: wait, warm up 1, record the window
        profiler = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CUDA], on_trace_ready=truth.cycle,
            schedule=torch.profiler.schedule(wait=a.kernel_truth - 1 - WINDOW, warmup=1,
                                             active=WINDOW))
    with profiler as p:
        t0, t_half, t_end = loop(a, run, marks, after_step=p.step if truth else None)
    torch.cuda.synchronize()
    # The period from step 63 (the end of simprof run --gpu's first sampled window, as it counts
    # by default) to the last: the span its device rate (steps_per_s) is measured over.
    first = min(63, a.steps // 4)
    half = a.steps // 2
    period_ms = marks[first][3].elapsed_time(marks[-1][3]) / (a.steps - 1 - first)
    stage_us = {name: 1e3 * sum(marks[i][k].elapsed_time(marks[i][k + 1])
                                for i in range(half, a.steps)) / (a.steps - half)
                for k, name in enumerate(STAGES)}
    out = {"events_period_us": 1e3 * period_ms, "events_stage_us": stage_us,
           "host_period_us": 1e6 * (t_end - t_half) / (a.steps - half),
           "n_envs": a.n_envs, "kernels": a.kernels, "graph": a.graph,
           "steps": a.steps, "wall_s": t_end - t0}
    if a.ab:
        out["ab_ratio"] = ab_ratio(marks, a.ab)
    if truth:
        out.update(truth.result())
        out["sampled_events_stage_us"] = sampled_event_spans(marks, a.kernel_truth)
    print(json.dumps(out))


STAGES = ("physics", "sensors", "rewards")
WINDOW = 2  # the consecutive steps simprof run --gpu samples, the last of every --gpu-every


def stage_spans(kernels, counts, steps=WINDOW):
    """One recorded cycle's kernels, (start, end) in ns, as its last `steps` steps' stage spans in
    us (kernels queued in the warm-up step may run inside the recording: they come first), or
    None where there are fewer kernels than that."""
    per_step = sum(counts)
    if len(kernels) < steps * per_step:
        return None
    kernels = sorted(kernels)[-steps * per_step:]
    out = []
    for first in range(0, len(kernels), per_step):
        spans, k = {}, first
        for name, n in zip(STAGES, counts):
            spans[name] = (max(e for _, e in kernels[k:k + n]) - kernels[k][0]) * 1e-3
            k += n
        out.append(spans)
    return out


class KernelTruth:
    """torch.profiler's on_trace_ready: each recorded cycle's kernels as stage spans. A cycle ends
    at the step() after step every-1 of each every: one that ends elsewhere is counted."""

    def __init__(self, counts, every):
        self.counts, self.every, self.steps = counts, every, []
        self.short = self.extra = self.misaligned = 0

    def cycle(self, prof):
        self.misaligned += prof.step_num % self.every != 0
        kernels = device_kernels(prof)
        spans = stage_spans(kernels, self.counts)
        self.extra += max(0, len(kernels) - WINDOW * sum(self.counts))
        if spans is None:
            self.short += 1
        else:
            self.steps += spans

    def result(self):
        med = lambda name: (statistics.median(s[name] for s in self.steps) if self.steps
                            else float("nan"))
        return {"kernel_stage_us": {name: med(name) for name in STAGES},
                "kernel_steps": len(self.steps), "kernel_cycles_short": self.short,
                "kernel_cycles_misaligned": self.misaligned, "kernel_extra": self.extra}


def device_kernels(prof):
    """The loop's kernels (x.add_: an elementwise kernel) in torch.profiler's last cycle, as
    (start, end) in ns; the cycle's other device events (annotations, copies) are left out."""
    out = []
    for e in prof.profiler.kineto_results.events():
        if e.device_type() != torch.autograd.DeviceType.CUDA or "elementwise" not in e.name():
            continue
        if hasattr(e, "start_ns"):
            start, dur = e.start_ns(), e.duration_ns()
        else:
            start, dur = 1000 * e.start_us(), 1000 * e.duration_us()
        out.append((start, start + dur))
    return out


def sampled_event_spans(marks, every):
    """The loop's own event spans of each stage on steps every-2 and every-1 of each every, the
    median, in us."""
    steps = [m for i, m in enumerate(marks) if i % every >= every - WINDOW]
    return {name: 1e3 * statistics.median(m[k].elapsed_time(m[k + 1]) for m in steps)
            if steps else float("nan") for k, name in enumerate(STAGES)}


def ab_ratio(marks, n):
    """The median over pairs of blocks (ranged, then not) of their device periods' ratio."""
    ends = [m[3] for m in marks]
    blocks = [ends[b - 1].elapsed_time(ends[b + n - 1]) for b in range(n, len(ends) - n + 1, n)]
    # Block k covers steps [(k + 1) n, (k + 2) n): ranged where k + 1 is even. The first pair
    # starts at step 2n (steps before it warm up).
    ratios = [blocks[k] / blocks[k + 1] for k in range(1, len(blocks) - 1)
              if (k + 1) % 2 == 0]
    return statistics.median(ratios)


@contextlib.contextmanager
def unranged(_name):
    yield


def loop(a, run, marks, after_step=None):
    """The steps, each marked by NVTX ranges and timed by events: (start, half-way, end).
    `after_step` is called after each step's range (torch.profiler's step())."""
    t0 = time.perf_counter()
    half = a.steps // 2
    t_half = t0
    ranged = torch.cuda.nvtx.range
    for i in range(a.steps):
        if i == half:
            t_half = time.perf_counter()
        m = marks[i]
        # --ab: every other block of steps without ranges (the same calls, through a no-op).
        rng = ranged if not a.ab or (i // a.ab) % 2 == 0 else unranged
        with rng("step"):
            m[0].record()
            with rng("physics"):
                run[0]()
            m[1].record()
            with rng("sensors"):
                with rng("Cam"):
                    run[1]()
            m[2].record()
            with rng("rewards"):
                run[2]()
            m[3].record()
        if after_step:
            after_step()
    return t0, t_half, time.perf_counter()


if __name__ == "__main__":
    main()
