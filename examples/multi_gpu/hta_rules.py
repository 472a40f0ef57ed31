#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Holistic Trace Analysis's first steps on a directory of per-rank traces, for machines without
HTA (it is not installed on ours and cannot be fetched there): the same rules as HTA's
trace_file.py, trace.py (_filter_irrelevant_gpu_kernels), trace_filter.py, utils.py
(get_kernel_type) and communication_analysis.py (get_comm_comp_overlap), in pandas. Where HTA is
installed, use it: `TraceAnalysis(trace_dir=DIR)`, `get_comm_comp_overlap()`,
`get_cuda_kernel_launch_stats()`.

usage: hta_rules.py TRACE_WINDOW_DIR
"""
import json
import os
import re
import sys

import pandas as pd


def load(path):
    raw = open(path).read()
    m = re.search(r'"rank":\s+(\d+)', raw)  # HTA's raw-text rank
    j = json.loads(raw)
    if "distributedInfo" not in j or "rank" not in j["distributedInfo"]:
        raise SystemExit(f"{path}: no distributedInfo.rank: HTA cannot process it")
    rank = j["distributedInfo"]["rank"]
    if m is None or int(m.group(1)) != rank:
        raise SystemExit(f"{path}: HTA's regex reads rank {m and m.group(1)}, the JSON {rank}")
    rows = []
    for e in j["traceEvents"]:
        if e.get("ph") != "X" or "dur" not in e or "cat" not in e or e["cat"] == "Trace":
            continue  # HTA drops rows without dur or cat
        a = e.get("args", {})
        rows.append(dict(name=e["name"], cat=e["cat"], ts=e["ts"], dur=e["dur"],
                         stream=a.get("stream", -1), correlation=a.get("correlation", -1),
                         pid=e["pid"], tid=e["tid"]))
    df = pd.DataFrame(rows)
    df["end"] = df["ts"] + df["dur"]
    return rank, df


def kernel_type(name):
    if name.startswith("nccl"):
        return "COMMUNICATION"
    if name.startswith("Memcpy") or name.startswith("Memset"):
        return "MEMORY"
    return "COMPUTATION"


def merge(iv):
    iv = iv.sort_values("ts")
    out = []
    for ts, end in zip(iv["ts"], iv["end"]):
        if out and ts <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([ts, end])
    return out


def overlap(a, b):
    n, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        n += max(0.0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return n


def main():
    d = sys.argv[1]
    files = [f for f in os.listdir(d) if f.endswith(".json") or f.endswith(".gz")]
    ranks = {}
    for f in sorted(files):
        rank, df = load(os.path.join(d, f))
        if rank in ranks:
            raise SystemExit(f"two files say rank {rank}: HTA would keep only the last")
        ranks[rank] = df
    print(f"ranks {sorted(ranks)}")
    print(f"{'rank':>4} {'kernels':>8} {'comm':>6} {'comm us':>9} {'comp/comm overlap':>18} "
          f"{'launches':>9} {'launch delay p50 us':>20}")
    for rank, df in sorted(ranks.items()):
        steps = df[df["name"].str.match(r"ProfilerStep\s*#\s*\d+")]
        cpu = df[df["stream"] == -1]
        gpu = df[df["stream"] > 0]
        if len(steps) >= 2:  # HTA keeps kernels launched before the last step (correlation)
            cpu = cpu[cpu["ts"] < steps["ts"].max()]
            gpu = gpu[gpu["correlation"].isin(set(cpu["correlation"]))]
        kernels = gpu[gpu["cat"] == "kernel"].copy()
        kernels["type"] = kernels["name"].map(kernel_type)
        comm = merge(kernels[kernels["type"] == "COMMUNICATION"])
        comp = merge(kernels[kernels["type"] == "COMPUTATION"])
        comm_total = sum(e - b for b, e in comm)
        ov = overlap(comm, comp) / comm_total if comm_total > 0 else float("nan")
        launches = cpu[cpu["cat"].isin(["cuda_runtime", "cuda_driver"])]
        joined = kernels.merge(launches[["correlation", "ts"]], on="correlation",
                               suffixes=("", "_launch"))
        delay = (joined["ts"] - joined["ts_launch"]).median() if len(joined) else float("nan")
        print(f"{rank:>4} {len(kernels):>8} {(kernels['type'] == 'COMMUNICATION').sum():>6} "
              f"{comm_total:>9.1f} {100 * ov:>17.1f}% {len(joined):>9} {delay:>20.1f}")


if __name__ == "__main__":
    main()
