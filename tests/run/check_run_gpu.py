#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`simprof run --gpu` on a GPU program nobody changed (nvtx_cuda_program): the device table holds
each range's kernels on the GPU's clock, the FPS line is the GPU's, and the trace has the kernels.
Skips (77) where no GPU is visible.

  check_run_gpu.py SIMPROF NVTX_CUDA_PROGRAM
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

SIMPROF, PROGRAM = sys.argv[1], sys.argv[2]
failures = []

probe = subprocess.run([PROGRAM, "1"], capture_output=True, text=True, timeout=120)
if probe.returncode == 77:
    print("skipped: " + probe.stdout.strip())
    sys.exit(77)


def run(*args):
    p = subprocess.run([SIMPROF, *args], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, SIMPROF_SHOW_FPS="1"))
    return p.returncode, p.stderr + p.stdout


def expect(what, cond, out):
    if not cond:
        failures.append("%s\n--- output ---\n%s" % (what, out))


def row(record, name):
    return next((r for r in record["device"]["stages"] if r["stage"] == name), None)


def within(tag, record, name, low_us, high_us, out):
    r = row(record, name)
    expect("%s: device row %s" % (tag, name), r is not None, out)
    if r is not None:
        p50 = r["p50_s"] * 1e6
        expect("%s: %s's device p50 %.1f us in [%g, %g]" % (tag, name, p50, low_us, high_us),
               low_us <= p50 <= high_us, out)


def launch_args(launches):
    return [] if launches == "default" else ["--gpu-launches", launches]


def windows(d, mode, launches):
    """Sampled windows of the program in `mode`, the launches seen through `launches` (the
    default: the launch hook): what the device table and the record say against the kernels' known
    lengths and the program's events."""
    tag = "%s (%s)" % (mode, launches)
    record_path = os.path.join(d, "%s-%s.json" % (mode, launches))
    # 1,500 steps of ~190 us: several 50 ms samples of the FPS line.
    program = [PROGRAM, "1500"] + (["graph"] if mode == "graph" else [])
    # --gpu-interval 0: a window in every 4 steps however short they are (this checks what
    # the windows read, not what they cost).
    rc, out = run("run", "--gpu", "--gpu-every", "4", "--gpu-interval", "0", "--n-envs", "1000",
                  "--json", record_path, *launch_args(launches), "--", *program)
    expect("%s: exit status 0" % tag, rc == 0, out)
    expect("%s: the device table is printed" % tag, "on the GPU's clock" in out, out)
    expect("%s: the FPS line is the GPU's" % tag, "GPU clock" in out, out)
    with open(record_path) as f:
        record = json.load(f)
    dev = record["device"]
    expect("%s: device side on" % tag, dev["on"] and dev["fps_clock"] == "device", out)
    seen = "cupti" if launches == "cupti" else "hook"
    expect("%s: the launches seen through %s (record: %s, hook_unused: %s)" % (
        tag, seen, dev["launches"], dev["hook_unused"]),
        dev["launches"] == seen and dev["hook_unused"] is None, out)
    # The host runs hundreds of steps ahead of the GPU: windows it arms while every one is
    # still waiting are skipped (counted); the rest are read.
    expect("%s: sampled steps (%d; %d windows skipped)" % (
        tag, dev["sampled_steps"], dev["skipped_windows"]), dev["sampled_steps"] >= 20, out)
    expect("%s: no window dropped" % tag, dev["dropped"] == 0, out)
    expect("%s: no launch into a capture" % tag, dev["capturing_launches"] == 0, out)
    # Spin kernels of 100 + 50 us back to back on one stream, 30 us after them: each range's
    # device time is its kernels' lengths within 5 % or 1 us (issue 43's target), the events'
    # own cost taken off. The period carries a sampled step's events: it is not a range's work.
    within(tag, record, "physics", 149, 157.5, out)
    within(tag, record, "sensors", 29, 31.5, out)
    within(tag, record, "step", 179, 189, out)
    within(tag, record, "period", 180, 200, out)
    if mode == "eager":
        within(tag, record, "physics/contacts", 49, 52.5, out)
    # The device rate the FPS line samples, against the program's own CUDA events over the
    # same steps (from the first sampled window's end to the last step).
    events = re.search(r"events period_us=([0-9.]+)", out)
    expect("%s: events printed" % tag, events, out)
    if events:
        truth = 1e6 / float(events.group(1))
        rate = dev["steps_per_s"]
        expect("%s: device steps/s %.1f within 1%% of the events' %.1f" % (tag, rate, truth),
               abs(rate / truth - 1) < 0.01, out)


with tempfile.TemporaryDirectory() as d:
    for mode in ("eager", "graph"):
        # The launches seen through the preloaded launch hook (the default) and through CUPTI.
        for launches in ("default", "cupti"):
            windows(d, mode, launches)
        program = [PROGRAM, "1500"] + (["graph"] if mode == "graph" else [])
        # The --trace-steps window: the ranges and the kernels launched in them (through CUPTI:
        # its window stalls the loop, so the rates above are from a run without one).
        rc, out = run("run", "--gpu", "--trace-steps", "20:23", "--trace-dir", os.path.join(d, mode),
                      "--", *program)
        expect("%s: exit status 0 with --trace-steps" % mode, rc == 0, out)
        traces = glob.glob(os.path.join(d, mode, "simprof_trace_0", "rank0.json"))
        expect("%s: the trace is written" % mode, len(traces) == 1, out)
        if traces:
            with open(traces[0]) as f:
                trace = json.load(f)
            events_ = trace["traceEvents"]
            kernels = [e for e in events_ if e.get("cat") == "kernel"]
            expect("%s: the trace's kernels (3 steps)" % mode,
                   len(kernels) == 9, out)
            expect("%s: the trace's causality holds" % mode,
                   trace.get("otherData", {}).get("causality", "").startswith("ok"), out)

# A program that holds CUPTI itself (as torch.profiler or nsys would): through CUPTI, simprof's
# device side gives up its device times and says so with CUPTI's reason; the program keeps CUPTI
# and the host table stands.
rc, out = run("run", "--gpu", "--step", "step", "--gpu-launches", "cupti", "--", PROGRAM, "200",
              "cupti")
expect("cupti: the program ran with CUPTI its own (exit 0)",
       rc == 0 and "CUPTI is this program's" in out, out)
expect("cupti: simprof says it gave up the device times, and why",
       "no device times: cuptiSubscribe failed" in out, out)
expect("cupti: the host table stands", '200 steps of the NVTX range "step" (host clock)' in out,
       out)
# ... while through the launch hook (the default) simprof needs no CUPTI: device times beside the
# program's own.
rc, out = run("run", "--gpu", "--step", "step", "--gpu-every", "4", "--gpu-interval", "0", "--",
              PROGRAM, "200", "cupti")
expect("cupti (hook): the program keeps CUPTI and simprof has its device times",
       rc == 0 and "CUPTI is this program's" in out and "on the GPU's clock" in out
       and "no device times" not in out, out)

# A program that takes CUPTI halfway through: simprof subscribes only during its windows, so the
# program gets it; simprof's sampling stops at its next window and says why, and its table of the
# windows before stands.
rc, out = run("run", "--gpu", "--step", "step", "--gpu-every", "4", "--gpu-interval", "0",
              "--gpu-launches", "cupti", "--", PROGRAM, "1000", "cupti-late")
late = re.search(r"CUPTI is this program's from step (\d+)", out)
expect("cupti-late: the program took CUPTI mid-run (exit 0)",
       rc == 0 and late is not None, out)
if late:
    expect("cupti-late: ... within 8 steps of asking", int(late.group(1)) < 508, out)
expect("cupti-late: simprof says its sampling stopped, and why",
       "device sampling stopped: cuptiSubscribe failed" in out, out)
expect("cupti-late: the windows before it stand", "on the GPU's clock" in out, out)

if failures:
    print("\n\n".join(failures))
    sys.exit(1)
print("simprof run --gpu: eager, graph (the launch hook and CUPTI), and a program holding CUPTI "
      "from the start and from mid-run checked")
