#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`simprof run --gpu` on a torch loop nobody changed (nvtx_loop.py): is its FPS line what the GPU
did, are its stage times the device's, and what does it cost?

    python3 run_bench.py --simprof <simprof command> [--n-envs 1024 30000] [--kernels 100]
        [--steps 3000] [--repeats 3] [--gpu-every 64] [--gpu-interval MS] [--torch-profiler]
        [--gpu-launches auto|cupti|hook] [--pin CPU] [--ab N] [--kernel-truth]
        [--json out.json]

Per size and mode (eager, torch.cuda.CUDAGraph), `repeats` rounds, each the loop alone and then
under `simprof run --gpu`, every run timing itself with CUDA events (nvtx_loop.py):

  FPS     the device rate the FPS line samples (steps per device second between the first and
          the last sampled step end, from the run record) over the events' throughput of the same
          steps, and the FPS line's last value (an EMA over the last second or so) over the same
          throughput. Target: both within 1 %.
  stages  each stage's device mean from the record against the same stage's event span in the same
          run (an event before physics and after each stage: a stage's events also hold the idle
          gap before its first kernel, which a launch-bound loop has). Target: within 5 % or 1 us
          where the loop is GPU-bound (its host period under its device period); a host-bound
          loop's stages are not judged (said, and not counted as met).
  cost    the events' device period under simprof run over the loop's alone, the median of the
          rounds; "null" compares the loop alone with itself across rounds (the spread of separate
          processes). Target: <= 2 %, met only where the null is within 1 %. Beside it, the host's
          side: the loop's own host period under simprof run over its period alone.
  torch.profiler  with --torch-profiler, each round also runs the loop inside torch.profiler
          (CPU and CUDA activities, every step traced): its cost the same way, for comparison.

--ab N measures the cost within each process instead (nvtx_loop.py --ab: blocks of N steps,
every other one without its ranges): the ranged blocks' period over their neighbours' under simprof
run, over the same ratio of the loop alone. Only the cost is judged then.

--kernel-truth judges the stages against CUPTI instead, on the very steps simprof run samples, in
eager loops too: each round runs `simprof run --gpu --gpu-launches hook --gpu-interval 0 --step
step` over nvtx_loop.py --kernel-truth (torch.profiler recording the kernels of steps every-2 and
every-1 of each --gpu-every, the steps simprof run samples), and each stage's device p50 from the
record is held to its kernels' span (first start to last end) on those steps, the median: within
5 % or 1 us. The loop's own events on those steps are shown beside. Nothing else is judged then
(torch.profiler slows the recorded steps), and graph loops are shown, not judged: CUPTI's kernel
records slow each graph launch on the host (the GPU waits inside the range for a graph that a loop
alone launches in microseconds), so they are no reference for a graph range.

--pin CPU runs every process on that one CPU (the loop, simprof run and the program it starts):
an eager loop is bound by its host, and separate processes on whatever cores the scheduler gives
them spread far more than a cost of a few percent.

Exit status 0 when every target judged is met, and something was: a loop not judged counts as
missed, except a graph loop under --kernel-truth, which is left out.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def loop_args(n_envs, kernels, graph, steps, ab=0):
    return [sys.executable, os.path.join(HERE, "nvtx_loop.py"), "--n-envs", str(n_envs),
            "--kernels", str(kernels), "--steps", str(steps)] + (["--graph"] if graph else []) + \
        (["--ab", str(ab)] if ab else [])


def last_json(text):
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("no JSON line in the loop's output:\n" + text)


def run(a, args, check=True):
    """One process (on CPU a.pin alone where given), its output captured."""
    pin = None if a.pin is None else (lambda: os.sched_setaffinity(0, {a.pin}))
    return subprocess.run(args, capture_output=True, text=True, check=check, preexec_fn=pin)


def profiled_run(a, options, loop):
    """`simprof run OPTIONS --no-fps --json REC -- LOOP`: the loop's JSON line and the record."""
    with tempfile.TemporaryDirectory() as d:
        rec = os.path.join(d, "run.json")
        q = run(a, [a.simprof, "run", *options, "--no-fps", "--json", rec, "--"] + loop,
                check=False)
        if q.returncode != 0:
            raise RuntimeError("simprof run failed:\n" + q.stdout + q.stderr)
        with open(rec) as f:
            return last_json(q.stdout), json.load(f)


def one_config(a, n_envs, graph):
    plain, profiled, fps, stages, torch_prof, launches = [], [], [], [], [], []
    for _ in range(a.repeats):
        if a.torch_profiler:
            t = run(a, loop_args(n_envs, a.kernels, graph, a.steps, a.ab) + ["--torch-profiler"])
            torch_prof.append(last_json(t.stdout))
        p = run(a, loop_args(n_envs, a.kernels, graph, a.steps, a.ab))
        plain.append(last_json(p.stdout))
        gpu = ["--no-gpu"] if a.no_gpu else ["--gpu", "--gpu-every", str(a.gpu_every)]
        if not a.no_gpu and a.gpu_interval is not None:
            gpu += ["--gpu-interval", str(a.gpu_interval)]
        if not a.no_gpu and a.gpu_launches is not None:
            gpu += ["--gpu-launches", a.gpu_launches]
        loop, record = profiled_run(a, gpu + ["--n-envs", str(n_envs)],
                                    loop_args(n_envs, a.kernels, graph, a.steps, a.ab))
        profiled.append(loop)
        dev = record["device"] or {"steps_per_s": float("nan"), "fps_per_env": float("nan"),
                                   "stages": [], "sampled_steps": 0}
        # A run that sampled no step (--gpu-every past the run) has no device rate: NaN.
        known = lambda v: float("nan") if v is None else v
        fps.append((known(dev["steps_per_s"]) / (1e6 / loop["events_period_us"]),
                    known(dev["fps_per_env"]) / (1e6 / loop["events_period_us"])))
        rows = {r["stage"]: r for r in dev["stages"]}
        stages.append({n: (rows[n]["mean_s"] * 1e6 if n in rows else float("nan"), us)
                       for n, us in loop["events_stage_us"].items()})
        stages[-1]["_sampled"] = dev["sampled_steps"]
        launches.append(dev.get("launches"))  # how simprof run saw them: "hook" or "cupti"
    med = lambda v: statistics.median(v)
    base = med([r["events_period_us"] for r in plain])
    cost = med([r["events_period_us"] for r in profiled]) / base - 1
    null = max(r["events_period_us"] for r in plain) / min(r["events_period_us"] for r in plain) - 1
    gpu_bound = med([r["host_period_us"] for r in plain]) < base
    # The host's side of the cost: the loop's own host period (its clock around the same steps).
    host_cost = (med([r["host_period_us"] for r in profiled]) /
                 med([r["host_period_us"] for r in plain]) - 1)
    out = {"n_envs": n_envs, "mode": "graph" if graph else "eager", "kernels": a.kernels,
           "period_us": base, "cost": cost, "host_cost": host_cost, "null": null,
           "fps_ratio": med([f[0] for f in fps]), "fps_line_ratio": med([f[1] for f in fps]),
           "gpu_bound": gpu_bound, "stages": {}, "sampled_steps": stages[-1]["_sampled"],
           "launches": launches[-1],
           "rounds_us": [[p["events_period_us"], q["events_period_us"]]
                         for p, q in zip(plain, profiled)]}
    if a.ab:  # in-process: the ranged blocks over the others, under simprof run over alone
        ab = lambda runs: med([r["ab_ratio"] for r in runs])
        out["ab_cost"] = ab(profiled) / ab(plain) - 1
        out["ab_null"] = (max(r["ab_ratio"] for r in plain) / min(r["ab_ratio"] for r in plain) -
                          1)
        out["ab_rounds"] = [[p["ab_ratio"], q["ab_ratio"]] for p, q in zip(plain, profiled)]
    if torch_prof:
        out["torch_profiler_cost"] = med([r["events_period_us"] for r in torch_prof]) / base - 1
    for name in ("physics", "sensors", "rewards"):
        ours = med([s[name][0] for s in stages])
        events = med([s[name][1] for s in stages])
        out["stages"][name] = {"device_us": ours, "events_us": events}
    # The stages are judged only where the loop is GPU-bound (None: not judged, never "met").
    # With --ab only the cost is judged: half the steps have no ranges, so simprof run's rate and
    # stages are over the others.
    if a.ab:
        out["met"] = {"cost": out["ab_cost"] <= 0.02 and out["ab_null"] <= 0.01}
        return out
    out["met"] = {
        "fps": abs(out["fps_ratio"] - 1) <= 0.01 and abs(out["fps_line_ratio"] - 1) <= 0.01,
        "cost": cost <= 0.02 and null <= 0.01,
        "stages": None if not gpu_bound else all(
            abs(v["device_us"] - v["events_us"]) <= max(1.0, 0.05 * v["events_us"])
            for v in out["stages"].values()),
    }
    return out


def truth_config(a, n_envs, graph):
    """--kernel-truth: the device table's stage p50s against CUPTI's kernel spans, same steps."""
    rounds = []
    for _ in range(a.repeats):
        loop, record = profiled_run(
            a, ["--gpu", "--gpu-every", str(a.gpu_every), "--gpu-interval", "0",
                "--gpu-launches", "hook", "--step", "step"],
            loop_args(n_envs, a.kernels, graph, a.steps) + ["--kernel-truth", str(a.gpu_every)])
        dev = record["device"] or {"stages": [], "off_reason": "no device record"}
        if dev.get("off_reason"):
            print("simprof run: no device times: %s" % dev["off_reason"], flush=True)
        rows = {r["stage"]: r["p50_s"] * 1e6 for r in dev["stages"]}
        rounds.append({n: (rows.get(n, float("nan")), loop["kernel_stage_us"][n],
                           loop["sampled_events_stage_us"][n]) for n in loop["kernel_stage_us"]})
        # The same steps: as many recorded as sampled, every cycle whole and where it belongs.
        rounds[-1]["_steps"] = (dev.get("sampled_steps", 0), loop["kernel_steps"],
                                loop["kernel_cycles_short"] + loop["kernel_cycles_misaligned"])
    med = lambda v: statistics.median(v)
    stages = {n: {"device_us": med([r[n][0] for r in rounds]),
                  "kernels_us": med([r[n][1] for r in rounds]),
                  "events_us": med([r[n][2] for r in rounds])}
              for n in ("physics", "sensors", "rewards")}
    steps = [r["_steps"] for r in rounds]
    same_steps = all(s > 0 and s == k and bad == 0 for s, k, bad in steps)
    # Graph loops are shown, not judged (None): CUPTI's records slow each graph launch.
    met = None if graph else same_steps and all(
        abs(v["device_us"] - v["kernels_us"]) <= max(1.0, 0.05 * v["kernels_us"])
        for v in stages.values())
    return {"n_envs": n_envs, "mode": "graph" if graph else "eager", "kernels": a.kernels,
            "stages": stages, "rounds_steps": steps, "same_steps": same_steps,
            "met": {"stages_vs_kernels": met}}


def print_truth(r):
    st = ", ".join("%s %.1f/%.1f us (%+.1f %%; events %.1f)" % (
        k, v["device_us"], v["kernels_us"], 100 * (v["device_us"] / v["kernels_us"] - 1),
        v["events_us"]) for k, v in r["stages"].items())
    counts = ", ".join("%d/%d" % (s, k) + (" (%d cycles short or misplaced)" % bad if bad else "")
                       for s, k, bad in r["rounds_steps"])
    print("%6d envs %-5s stages device p50 / CUPTI kernels (steps sampled/recorded: %s%s): %s%s"
          % (r["n_envs"], r["mode"], counts, "" if r["same_steps"] else ", NOT THE SAME STEPS", st,
             {True: "", False: " MISSED", None: " (not judged: graph)"}[
                 r["met"]["stages_vs_kernels"]]), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--simprof", required=True)
    ap.add_argument("--n-envs", type=int, nargs="+", default=[1024, 30000])
    ap.add_argument("--kernels", type=int, default=100)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--gpu-every", type=int, default=64)
    ap.add_argument("--gpu-launches", choices=["auto", "cupti", "hook"], default=None,
                    help="how simprof run sees the launches (default: simprof run's, auto)")
    ap.add_argument("--ab", type=int, default=0,
                    help="in-process cost: blocks of N steps, every other one without ranges")
    ap.add_argument("--pin", type=int, default=None,
                    help="run every process on this one CPU (an eager loop is host-bound)")
    ap.add_argument("--gpu-interval", type=int, default=None,
                    help="milliseconds between windows at least (default: simprof run's, 100)")
    ap.add_argument("--modes", nargs="+", default=["eager", "graph"], choices=["eager", "graph"])
    ap.add_argument("--no-gpu", action="store_true",
                    help="simprof run --no-gpu: the host side's cost alone")
    ap.add_argument("--torch-profiler", action="store_true",
                    help="also the loop inside torch.profiler, each round: its cost beside ours")
    ap.add_argument("--kernel-truth", action="store_true",
                    help="only the stages, against CUPTI's kernels on the sampled steps")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.kernel_truth and (a.ab or a.torch_profiler or a.no_gpu or a.gpu_interval is not None or
                           a.gpu_launches not in (None, "hook")):
        ap.error("--kernel-truth runs simprof run --gpu --gpu-launches hook --gpu-interval 0 "
                 "itself: without --ab, --torch-profiler, --no-gpu, --gpu-interval and another "
                 "--gpu-launches")
    results = []
    for n in a.n_envs:
        for graph in [m == "graph" for m in a.modes]:
            if a.kernel_truth:
                results.append(truth_config(a, n, graph))
                print_truth(results[-1])
                continue
            r = one_config(a, n, graph)
            results.append(r)
            if a.ab:
                print("%6d envs %-5s [%s] period %7.1f us  in-process cost %+.2f %% (null %.2f %%)"
                      "%s  rounds (alone, simprof run): %s" % (
                          n, r["mode"], r["launches"], r["period_us"], 100 * r["ab_cost"],
                          100 * r["ab_null"], "" if r["met"]["cost"] else " MISSED",
                          ", ".join("%.4f/%.4f" % tuple(x) for x in r["ab_rounds"])), flush=True)
                continue
            st = ", ".join("%s %.1f/%.1f us" % (k, v["device_us"], v["events_us"])
                           for k, v in r["stages"].items())
            print("%6d envs %-5s [%s] period %7.1f us  rate/events %.4f%s (line %.3f)  "
                  "cost %+.2f %% (host %+.2f %%; null %.2f %%)%s"
                  "  stages device/events: %s%s" % (
                      n, r["mode"], r["launches"], r["period_us"], r["fps_ratio"],
                      "" if r["met"]["fps"] else " MISSED", r["fps_line_ratio"], 100 * r["cost"],
                      100 * r["host_cost"], 100 * r["null"],
                      "" if r["met"]["cost"] else (" NOISY" if r["null"] > 0.01 else " MISSED"),
                      st, {True: "", False: " MISSED", None: " (not judged: host-bound)"}[
                          r["met"]["stages"]]), flush=True)
            if "torch_profiler_cost" in r:
                print("%6d envs %-5s torch.profiler cost %+.2f %%" % (
                    n, r["mode"], 100 * r["torch_profiler_cost"]), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"bench": "run_bench", "steps": a.steps, "repeats": a.repeats,
                       "gpu_every": a.gpu_every, "results": results}, f, indent=2)
    # --kernel-truth leaves graph loops out (None); otherwise None (host-bound) is not met.
    judged = [v for r in results for v in r["met"].values() if not (a.kernel_truth and v is None)]
    if not judged:
        print("run_bench: nothing was judged (--kernel-truth judges eager loops only)")
    sys.exit(0 if judged and all(v is True for v in judged) else 1)


if __name__ == "__main__":
    main()
