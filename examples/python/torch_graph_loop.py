#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A K-kernel torch step captured with torch.cuda.CUDAGraph, profiled in one run: off, simprof's
KernelTracer (through the simprof package) and torch.profiler with the same schedule. Prints what
each profiler cost the run, writes both traces, and counts their kernels.

    PYTHONPATH=<build>/python python3 examples/python/torch_graph_loop.py [--n-envs 1024 30000]
        [--kernels 100] [--active 200] [--after 1500] [--out traces]

Every run is the same loop: `wait` untraced steps, 2 warm-up steps, `active` traced steps, then
`after` steps as the simulation goes on; the profiler is made before the loop and closed after it.
Each trace's kernels are then summed up (count, median, longest, total, kernels overlapping on
one stream, simprof's own physics check) and must be possible: no overlap on a stream. What
each profiler costs, against the same loop with no profiler (host clock, GPU drained where
each phase is timed):

  setup      making the profiler and its warm-up steps (one-time initialisation);
  per step   each traced step, steady (the active steps but the last);
  window end what the loop's own thread spent in the last traced step: stopping the trace, and
             for torch.profiler converting and exporting it;
  window     the run's total cost but the setup: the traced steps, the window's end and whatever
             the hand-over took from the steps after it. The target compares this.

simprof runs before torch.profiler (CUPTI takes one subscriber per process; torch keeps it).
"""
import argparse
import json
import os
import time

import torch

import simprof

WAIT, WARMUP = 10, 2


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


def run(active, after, make, one_step, close):
    """The loop every profiler gets: returns its phase times (seconds) and the profiler's result."""
    first_active = WAIT + WARMUP
    last_active = first_active + active - 1
    sync, now = torch.cuda.synchronize, time.perf_counter
    sync()
    t = {"begin": now()}
    prof = make()
    for i in range(last_active + 1 + after):
        if i == WAIT:
            sync()
            t["warmup"] = now()
        elif i == first_active:
            sync()
            t["active"] = now()
        elif i == last_active:
            sync()
            t["last"] = now()
        one_step(prof, i)
        if i == last_active:
            t["last_done"] = now()  # the window's end, as the loop's thread lived it
    result = close(prof)
    sync()
    t["end"] = now()
    return {"setup": t["active"] - t["begin"],
            "step": (t["last"] - t["active"]) / (active - 1),
            "window_end": t["last_done"] - t["last"],
            "window": t["end"] - t["active"],
            "total": t["end"] - t["begin"]}, result


def off_run(graph, a):
    return run(a.active, a.after, lambda: None, lambda p, i: graph.replay(), lambda p: None)[0]


def simprof_run(graph, n_envs, a, mode):
    """mode: "steps" (the profiler alone, no trace), "tracer" (the kernel tracer, its defaults,
    the window handed over beside the loop), "kernels" (kernels only, beside the loop),
    "tracer-sync" (defaults, the window handed over on the loop's thread)."""
    d = os.path.join(a.out, f"simprof_{n_envs}_{mode}")

    def make():
        prof = simprof.StepProfiler(n_envs=n_envs, show_fps=False)
        if mode == "steps":
            return prof, None, None
        session = simprof.TraceSession(prof, wait=WAIT, warmup=WARMUP, active=a.active, repeat=1,
                                       dir=d, background=mode != "tracer-sync")
        tracer = simprof.KernelTracer(prof, session, kernels_only=mode == "kernels")
        if not tracer.enabled:
            raise SystemExit(f"simprof's kernel tracer is off: {tracer.reason}")
        return prof, session, tracer

    def one(p, i):
        with p[0].step():
            graph.replay()

    def close(p):
        prof, session, tracer = p
        if session is None:
            return None
        session.wait()
        files = session.files
        tracer.close()
        session.close()
        return files[0] if files else None

    return run(a.active, a.after, make, one, close)


def torch_run(graph, n_envs, a):
    path = os.path.join(a.out, f"torch_{n_envs}.json")

    def make():
        schedule = torch.profiler.schedule(wait=WAIT, warmup=WARMUP, active=a.active, repeat=1)
        p = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            schedule=schedule, on_trace_ready=lambda prof: prof.export_chrome_trace(path))
        p.__enter__()
        return p

    def one(p, i):
        graph.replay()
        p.step()

    def close(p):
        p.__exit__(None, None, None)
        return path

    return run(a.active, a.after, make, one, close)


def kernel_figures(path):
    """What a trace says of its kernels: their count, median, longest and summed time (us), how
    many began before the previous kernel on their stream ended (none can: a stream runs one
    kernel at a time; the kernels of one graph launch may run side by side), and the physics check
    simprof wrote into its own traces (otherData.causality; None in torch's)."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    durations = sorted(e["dur"] for e in kernels)
    overlapping = 0
    tracks = {}
    for e in kernels:
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    for track in tracks.values():
        track.sort(key=lambda e: e["ts"])
        end, corr = float("-inf"), None
        for e in track:
            a = e.get("args", {})
            same_launch = a.get("graph id", 0) and a.get("correlation") == corr
            if e["ts"] < end and not same_launch:
                overlapping += 1
            if e["ts"] + e["dur"] >= end:
                end, corr = e["ts"] + e["dur"], a.get("correlation")
    other = doc.get("otherData", {}) if isinstance(doc, dict) else {}
    return {"kernels": len(kernels),
            "median": durations[len(durations) // 2] if durations else 0.0,
            "max": durations[-1] if durations else 0.0,
            "sum": sum(durations), "overlapping": overlapping,
            "physics": other.get("physics")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-envs", type=int, nargs="+", default=[1024, 30000])
    ap.add_argument("--kernels", type=int, default=100)
    ap.add_argument("--active", type=int, default=200)
    ap.add_argument("--after", type=int, default=1500, help="steps after the window")
    ap.add_argument("--out", default="traces")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("torch_graph_loop: no CUDA device")
    os.makedirs(a.out, exist_ok=True)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, "
          f"simprof {simprof.version()}; K={a.kernels} kernels per step, graph replay; {WAIT} wait, {WARMUP} warm-up, "
          f"{a.active} traced and {a.after} later steps")
    modes = ["steps", "tracer", "kernels", "tracer-sync"]
    graphs = {n: build_step(n, a.kernels) for n in a.n_envs}
    for n in a.n_envs:  # warm the GPU and the graphs
        off_run(graphs[n], a)
    rows = {n: {"off": [off_run(graphs[n], a)]} for n in a.n_envs}
    # simprof first for every size: torch.profiler keeps CUPTI's one subscriber once it has run.
    for n in a.n_envs:
        for m in modes:
            rows[n][m] = simprof_run(graphs[n], n, a, m)
    for n in a.n_envs:
        rows[n]["torch"] = torch_run(graphs[n], n, a)
        rows[n]["off"].append(off_run(graphs[n], a))
    ok = True
    expected = a.active * a.kernels
    figures = {}
    print(f"{'n_envs':>7} {'profiler':>15} {'setup ms':>9} {'per step us':>18} "
          f"{'window end ms':>13} {'window ms':>20} {'kernels':>8}")
    for n in a.n_envs:
        r = rows[n]
        off = {k: min(o[k] for o in r["off"]) for k in r["off"][0]}
        print(f"{n:>7} {'off':>15} {off['setup'] * 1e3:>9.1f} {off['step'] * 1e6:>11.1f}"
              f"{'':>7} {off['window_end'] * 1e3:>13.2f} {off['window'] * 1e3:>9.1f}{'':>11}")
        cost = {}
        for m in modes + ["torch"]:
            t, trace = r[m]
            cost[m] = t["window"] - off["window"]
            fig = kernel_figures(trace) if trace else None
            count = fig["kernels"] if fig else None
            if fig:
                figures[(n, m)] = fig
            name = "torch.profiler" if m == "torch" else f"simprof {m}"
            print(f"{'':>7} {name:>15} {(t['setup'] - off['setup']) * 1e3:>+9.1f} "
                  f"{t['step'] * 1e6:>10.1f} {100 * (t['step'] / off['step'] - 1):>+6.1f}% "
                  f"{t['window_end'] * 1e3:>13.2f} {cost[m] * 1e3:>+9.1f} "
                  f"{100 * cost[m] / off['window']:>+8.1f}% "
                  f"{count if count is not None else '':>8}")
            if m in ("tracer", "kernels", "tracer-sync"):
                ok &= count == expected
                ok &= fig is not None and (fig["physics"] or "").startswith("ok")
            if m == "torch":
                ok &= count is not None and count >= expected
            ok &= fig is None or fig["overlapping"] == 0
        best = min(cost["tracer"], cost["kernels"])
        ratio = best / cost["torch"] if cost["torch"] > 0 else float("inf")
        print(f"{'':>7} simprof's window costs {100 * ratio:.1f} % of torch.profiler's "
              f"({best * 1e3:.1f} ms against {cost['torch'] * 1e3:.1f} ms)")
        ok &= ratio <= 0.1
    print(f"\nthe traces' kernels (us): what each trace says the GPU did")
    print(f"{'n_envs':>7} {'trace':>19} {'kernels':>8} {'median':>8} {'max':>9} {'sum':>11} "
          f"{'overlapping':>11}  physics (simprof's own check)")
    for (n, m), f in figures.items():
        name = "torch.profiler" if m == "torch" else f"simprof {m}"
        print(f"{n:>7} {name:>19} {f['kernels']:>8} {f['median']:>8.3f} {f['max']:>9.1f} "
              f"{f['sum']:>11.0f} {f['overlapping']:>11}  {f['physics'] or ''}")
    print(f"traces under {a.out}; kernels expected in each: {expected}")
    print("target met: simprof's window costs <= 1/10 of torch.profiler's, same kernel count, "
          "every trace possible"
          if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
