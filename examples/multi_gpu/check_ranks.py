#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""multi_gpu --backend cpu --ranks 2 --trace DIR: two processes, one window directory holding only
rank0.json and rank1.json, each with its rank in distributedInfo (written as HTA's raw-text regex
finds it), the same ProfilerStep numbers, and an FPS line per rank. Prints "ranks ok".

usage: check_ranks.py MULTI_GPU_BINARY OUT_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys


def main():
    exe, out = sys.argv[1], sys.argv[2]
    shutil.rmtree(out, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env["SIMPROF_FPS_INTERVAL_MS"] = env.get("SIMPROF_FPS_INTERVAL_MS", "50")
    run = subprocess.run([exe, "--backend", "cpu", "--ranks", "2", "--n-envs", "64",
                          "--steps", "40", "--warmup", "2", "--trace", out],
                         capture_output=True, text=True, env=env, timeout=300)
    text = run.stdout + run.stderr
    if run.returncode != 0:
        sys.exit(f"multi_gpu failed ({run.returncode}):\n{text}")
    window = os.path.join(out, "simprof_trace_0")
    files = sorted(os.listdir(window))
    if files != ["rank0.json", "rank1.json"]:
        sys.exit(f"{window} holds {files}, expected rank0.json and rank1.json only")
    steps = []
    for rank, name in enumerate(files):
        raw = open(os.path.join(window, name)).read()
        m = re.search(r'"rank":\s+(\d+)', raw)
        if not m or int(m.group(1)) != rank:
            sys.exit(f"{name}: HTA's regex finds rank {m and m.group(1)}, expected {rank}")
        j = json.loads(raw)
        info = j["distributedInfo"]
        if info["rank"] != rank or info["world_size"] != 2:
            sys.exit(f"{name}: distributedInfo {info}")
        if raw.index('"distributedInfo"') > raw.index('"traceEvents"'):
            sys.exit(f"{name}: distributedInfo after traceEvents")
        steps.append(sorted(e["name"] for e in j["traceEvents"]
                            if e.get("name", "").startswith("ProfilerStep#")))
        if f"rank {rank}/2 (cpu" not in text:
            sys.exit(f"no summary line of rank {rank}:\n{text}")
    if steps[0] != steps[1] or len(steps[0]) < 2:
        sys.exit(f"ProfilerStep numbers differ or are too few: {steps}")
    print("ranks ok")


if __name__ == "__main__":
    main()
