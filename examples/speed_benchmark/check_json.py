#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ctest (label examples): speed_benchmark --json writes a run that parses and holds what the docs say.

usage: check_json.py SPEED_BENCHMARK OUT.json
"""
import json
import subprocess
import sys

exe, out = sys.argv[1], sys.argv[2]
subprocess.run([exe, "--backend", "cpu", "--n-envs", "64", "--steps", "20", "--quiet",
                "--memory", "--json", out], check=True, stdout=subprocess.DEVNULL)
with open(out, encoding="utf-8") as f:
    doc = json.load(f)
prov = doc["provenance"]
for key in ("simprof_commit", "build_type", "compiler", "date_utc", "host", "command", "options"):
    assert key in prov, f"provenance lacks {key}"
assert prov["options"]["backend"] == "cpu", prov["options"]
run = doc["runs"][0]
assert run["backend"] == "cpu" and run["n_envs"] == 64 and run["steps"] == 20, run
assert run["throughput_env_steps_per_s"] > 0, run
assert doc["schema"] == "simprof.run/2", doc["schema"]
w = run["workload"]
assert (w["backend"], w["mode"], w["n_envs"]) == ("cpu", "threads", 64) and "sync" in w, w
assert run["fps"]["clock"] == "host", run["fps"]
stages = {row["stage"]: row for row in run["stages"]}
assert all(len(row["samples_s"]) == row["steps"] for row in stages.values()), "samples per step"
for name in ("physics", "step", "period"):
    assert name in stages, f"no {name} row: {sorted(stages)}"
assert stages["step"]["steps"] == 20, stages["step"]
assert all(0 <= row["share_percent"] <= 100 for name, row in stages.items() if name != "period")
memory = run["memory"]  # --memory: the host heap through the hook; no CUDA calls on the CPU
assert memory["device_peak_bytes"] is None and memory["host_peak_resident_kib"] > 0, memory
rows = {row["stage"]: row for row in memory["stages"]}
assert "step" in rows and "physics" in rows, sorted(rows)
assert rows["step"]["host_allocs_per_step"] >= rows["physics"]["host_allocs_per_step"] >= 0, rows
assert rows["step"]["device_allocs_per_step"] == 0, rows["step"]
print("json ok")
