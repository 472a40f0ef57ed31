#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An example's --json FILE holds the run record's common parts (ctest, label examples):

    check_run_json.py OUT.json STAGE EXE [ARGS...]

runs EXE ARGS --json OUT.json (exit 0, or 3: the run's comparison with the engine's own figures
differed, which a loaded machine can cause and which this check is not about), then checks that
the file parses, that its provenance names the tool, commit, build, compiler, date, host, CPU,
the NVIDIA driver (null where none is loaded) and the command that was run, and that its stage
rows hold STAGE with a positive mean and every row's times in order (p50 <= p95 <= p99, none
negative). Prints "json ok" when all hold; exits 1 naming what does not."""
import json
import math
import subprocess
import sys


def fail(msg):
    print("check_run_json: " + msg)
    sys.exit(1)


def main():
    out, stage, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
    run = subprocess.run(cmd + ["--json", out], capture_output=True, text=True)
    if run.returncode not in (0, 3):
        fail("%s exited %d:\n%s%s" % (cmd[0], run.returncode, run.stdout, run.stderr))
    with open(out, encoding="utf-8") as f:
        doc = json.load(f)
    prov = doc.get("provenance") or fail("no provenance")
    for key in ("tool", "simprof_commit", "build_type", "compiler", "date_utc", "host", "cpu",
                "cpus", "command"):
        if prov.get(key) in (None, ""):
            fail("provenance.%s is missing or empty: %r" % (key, prov))
    drv = prov.get("nvidia_driver", "missing")  # null without a driver (CI); "580.159.04"
    if drv is not None and not (isinstance(drv, str) and drv and set(drv) <= set("0123456789.")):
        fail("provenance.nvidia_driver is neither null nor a driver version: %r" % drv)
    if "--json" not in prov["command"] or out not in prov["command"]:
        fail("provenance.command is not the command run: %r" % prov["command"])
    rows = doc.get("stages") or fail("no stage rows")
    names = [r["stage"] for r in rows]
    if stage not in names:
        fail("stage %r not among %r" % (stage, names))
    for r in rows:
        vals = [r[k] for k in ("mean_s", "p50_s", "p95_s", "p99_s") if r[k] is not None]
        if any(not math.isfinite(v) or v < 0 for v in vals):
            fail("row %r has a negative or non-finite time" % r)
        if r["p50_s"] is not None and not r["p50_s"] <= r["p95_s"] <= r["p99_s"]:
            fail("row %r: percentiles out of order" % r)
        if r["steps"] < 1:
            fail("row %r ran in no step" % r)
    if not next(r for r in rows if r["stage"] == stage)["mean_s"] > 0:
        fail("stage %r has no time" % stage)
    print("json ok: %d stage rows, %s at %s" % (len(rows), prov["tool"], prov["simprof_commit"]))


if __name__ == "__main__":
    main()
