#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A K-kernel torch step captured with torch.cuda.CUDAGraph, profiled three ways in one run: off,
simprof's KernelTracer (through the simprof package), and torch.profiler with the same schedule.
Prints µs per step and each profiler's overhead, writes both traces, and counts their kernels.

    PYTHONPATH=<build>/python python3 examples/python/torch_graph_loop.py [--n-envs 1024 30000]
        [--kernels 100] [--active 200] [--out traces]

The timed span is the active steps but the last (the one whose end writes the trace), host clock,
with the GPU drained at both ends: what the user's loop delivers with the profiler on. simprof runs
before torch.profiler (CUPTI takes one subscriber per process; torch keeps it once it has run).
"""
import argparse
import json
import os
import time

import torch

import simprof


def build_step(n_envs, kernels):
    x = torch.zeros(n_envs, 64, device="cuda")

    def body():
        for _ in range(kernels):
            x.add_(0.5)  # one elementwise kernel each

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # warm-up before capture, as torch asks
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()
    return CapturedStep(graph, x)


class CapturedStep:
    """The graph and the tensor its kernels write: the tensor must live as long as the graph."""

    def __init__(self, graph, state):
        self.graph, self.state = graph, state

    def replay(self):
        self.graph.replay()


def timed_loop(total, warmup, active, one_step):
    """Runs `total` steps; returns seconds per step over the active steps but the last."""
    first, last = warmup, warmup + active - 1
    t0 = t1 = 0.0
    for i in range(total):
        if i == first:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        if i == last:
            torch.cuda.synchronize()
            t1 = time.perf_counter()
        one_step(i)
    torch.cuda.synchronize()
    return (t1 - t0) / (last - first)


def kernels_in(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return sum(1 for e in events if e.get("cat") == "kernel")


def simprof_loop(graph, n_envs, active, out, mode):
    """The loop under simprof: "steps" (the profiler alone), "full" (the kernel tracer with
    its defaults), "kernels" (kernels only), "kernels-cupti-clock" (kernels only, CUPTI's clock),
    "with-overhead" (CUPTI's overhead records too), "no-runtime-driver". Seconds per step, trace."""
    warmup = 2
    prof = simprof.StepProfiler(n_envs=n_envs, show_fps=False)
    if mode == "steps":
        def plain(i):
            with prof.step():
                graph.replay()
        return timed_loop(warmup + active, warmup, active, plain), None
    d = os.path.join(out, f"simprof_{n_envs}_{mode}")
    session = simprof.TraceSession(prof, wait=0, warmup=warmup, active=active, repeat=1, dir=d)
    kinds = {"full": {}, "kernels": {"kernels_only": True},
             "kernels-cupti-clock": {"kernels_only": True, "cupti_clock": True},
             "with-overhead": {"overhead": True},
             "no-runtime-driver": {"runtime": False, "driver": False}}
    tracer = simprof.KernelTracer(prof, session, **kinds[mode])
    if not tracer.enabled:
        raise SystemExit(f"simprof's kernel tracer is off: {tracer.reason}")

    def one(i):
        with prof.step():
            graph.replay()

    s = timed_loop(warmup + active, warmup, active, one)
    files = session.files
    tracer.close()
    session.close()
    return s, files[0] if files else None


def torch_loop(graph, n_envs, active, out):
    warmup = 2
    path = os.path.join(out, f"torch_{n_envs}.json")
    schedule = torch.profiler.schedule(wait=0, warmup=warmup, active=active, repeat=1)
    with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            schedule=schedule, on_trace_ready=lambda p: p.export_chrome_trace(path)) as tp:
        def one(i):
            graph.replay()
            tp.step()
        s = timed_loop(warmup + active, warmup, active, one)
    return s, path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-envs", type=int, nargs="+", default=[1024, 30000])
    ap.add_argument("--kernels", type=int, default=100)
    ap.add_argument("--active", type=int, default=200)
    ap.add_argument("--out", default="traces")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("torch_graph_loop: no CUDA device")
    os.makedirs(a.out, exist_ok=True)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, simprof {simprof.version()}; "
          f"K={a.kernels} kernels per step, {a.active} active steps, graph replay")
    modes = ["steps", "full", "kernels", "kernels-cupti-clock", "with-overhead",
             "no-runtime-driver"]
    print(f"{'n_envs':>8} {'off us':>8} " + " ".join(f"{m:>20}" for m in modes + ["torch.profiler"])
          + "   kernels in the traces (each simprof trace, torch, expected)")
    # simprof first for every size: torch.profiler keeps CUPTI's one subscriber once it has run.
    graphs = {n: build_step(n, a.kernels) for n in a.n_envs}
    off = lambda n: timed_loop(2 + a.active, 2, a.active, lambda i: graphs[n].replay())
    rows = {n: {"off": off(n)} for n in a.n_envs}
    for n in a.n_envs:
        for m in modes:
            rows[n][m], rows[n][m + "_trace"] = simprof_loop(graphs[n], n, a.active, a.out, m)
    for n in a.n_envs:
        rows[n]["torch"], rows[n]["torch_trace"] = torch_loop(graphs[n], n, a.active, a.out)
        rows[n]["off_again"] = off(n)
    ok = True
    for n in a.n_envs:
        r = rows[n]
        base = min(r["off"], r["off_again"])
        cells = [f"{r[m] * 1e6:8.1f} us {100 * (r[m] / base - 1):+7.1f}%" for m in modes + ["torch"]]
        counts = [kernels_in(r[m + "_trace"]) for m in modes[1:] + ["torch"]]
        expected = a.active * a.kernels
        print(f"{n:>8} {base * 1e6:>8.1f} " + " ".join(f"{c:>20}" for c in cells) + "   "
              + "/".join(str(c) for c in counts + [expected]))
        print(f"         off before/after: {r['off'] * 1e6:.1f}/{r['off_again'] * 1e6:.1f} us; "
              f"traces: {r['full_trace']} {r['torch_trace']}")
        ok &= all(c == expected for c in counts[:-1]) and counts[-1] >= expected
        best = min(r[m] for m in modes[1:]) / base - 1
        ok &= best <= 0.1 * max(r["torch"] / base - 1, 0.0) or best <= 0.01
    print("target met: simprof's overhead <= 1/10 of torch.profiler's, same kernel count"
          if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
