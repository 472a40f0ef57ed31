#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a kernel tracer costs a replayed torch graph, with no Python step code around the replays:
the time per replay of 300 back-to-back replays (GPU drained at both ends: the device's time, unless
the host's launch is the slower) and the host time of one torch.cuda.CUDAGraph.replay() call (20
calls from an empty queue). One tool per process, as CUPTI has one subscriber:

    PYTHONPATH=<build>/python python3 examples/python/replay_under_tracing.py {off,simprof,torch}
        [--n-envs 1024] [--kernels 100]
"""
import argparse
import json
import time

import torch

from torch_graph_loop import build_step


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tool", choices=["off", "simprof", "torch"])
    ap.add_argument("--n-envs", type=int, default=1024)
    ap.add_argument("--kernels", type=int, default=100)
    a = ap.parse_args()
    graph = build_step(a.n_envs, a.kernels)  # the same step as torch_graph_loop.py
    for _ in range(100):
        graph.replay()
    sync, now = torch.cuda.synchronize, time.perf_counter

    def measure():
        sync()
        t0 = now()
        for _ in range(20):
            graph.replay()
        host = now() - t0
        sync()
        t1 = now()
        for _ in range(300):
            graph.replay()
        sync()
        return {"host_us_per_replay": round(host / 20 * 1e6, 2),
                "us_per_replay": round((now() - t1) / 300 * 1e6, 2)}

    if a.tool == "off":
        r = measure()
    elif a.tool == "simprof":
        import simprof
        prof = simprof.StepProfiler(n_envs=a.n_envs, show_fps=False)
        session = simprof.TraceSession(prof, active=1, dir="/tmp/replay_under_tracing")
        tracer = simprof.KernelTracer(prof, session)
        with prof.step():  # one traced step around all the replays
            r = measure()
        tracer.close()
        session.close()
    else:
        schedule = torch.profiler.schedule(wait=0, warmup=0, active=1, repeat=1)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA],
                                    schedule=schedule) as p:
            r = measure()
            p.step()
    print(json.dumps({"tool": a.tool, "n_envs": a.n_envs, "kernels": a.kernels, **r}))


if __name__ == "__main__":
    main()
