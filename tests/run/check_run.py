#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`simprof run` on a program nobody changed (nvtx_program): what it prints and returns.

  check_run.py SIMPROF NVTX_PROGRAM
"""
import json
import re
import os
import subprocess
import sys
import tempfile

SIMPROF, PROGRAM = sys.argv[1], sys.argv[2]
failures = []


def run(*args, env=None):
    p = subprocess.run([SIMPROF, *args], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stderr + p.stdout


def expect(what, cond, out):
    if not cond:
        failures.append("%s\n--- output ---\n%s" % (what, out))


# The step chosen by itself; stages by path, the domain's registered name included.
rc, out = run("run", "--no-fps", "--", PROGRAM, "40")
expect("the program's exit status (3) is passed on", rc == 3, out)
expect("the step range is chosen", 'steps are the NVTX range "step" (the outermost' in out, out)
expect("39 steps: the first run is before it repeats", '39 steps of the NVTX range "step"' in out, out)
for stage in ("physics", "  physics/contacts", "sensors"):
    expect("stage %s in the table" % stage.strip(), "\n%s " % stage in out, out)
expect("the loader thread's range is not a stage",
       "1 ranges on 1 other threads are not stages" in out, out)

# --step, --n-envs and the FPS line (every >= 50 ms: 400 steps of ~350 us).
rc, out = run("run", "--step", "step", "--n-envs", "1024", "--", PROGRAM, "400")
expect("--step: every run of it is a step", '400 steps of the NVTX range "step"' in out, out)
expect("the FPS line with the per-env rate", "FPS per env, 1024 envs)" in out, out)

# --json: the run record at exit, and its last snapshot after a crash.
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "run.json")
    rc, out = run("run", "--no-fps", "--json", path, "--", PROGRAM, "40")
    rec = json.load(open(path))
    expect("the record's schema, steps and stages",
           rec["schema"] == "simprof.run/2" and rec["final"] is True and rec["steps"] == 39
           and rec["step_range"] == "step"
           and [s["stage"] for s in rec["stages"]] ==
           ["physics", "physics/contacts", "sensors", "step", "period"], out + json.dumps(rec))
    expect("the record's provenance names the tool and the command",
           rec["provenance"]["tool"] == "simprof run"
           and rec["provenance"]["command"].endswith("nvtx_program 40"), json.dumps(rec))
    expect("the record's counts", rec["counts"]["other_threads"] == 1
           and rec["counts"]["unmatched_pops"] == 0, json.dumps(rec))
    expect("no temporary file is left", os.listdir(d) == ["run.json"], str(os.listdir(d)))
    # A program's other processes: one it runs writes its own record and says whose its report is;
    # a copy made by fork() without exec writes nothing.
    rc, out = run("run", "--no-fps", "--step", "step", "--json", path, "--", PROGRAM, "20",
                  "workers")
    rec = json.load(open(path))
    others = [f for f in os.listdir(d) if f.startswith("run.pid") and f.endswith(".json")]
    other = json.load(open(os.path.join(d, others[0]))) if len(others) == 1 else {}
    expect("a worker process has its own record, beside the program's, with its own command",
           rc == 3 and rec["steps"] == 20 and other.get("steps") == 9
           and other["provenance"]["command"].endswith("nvtx_program 9"), out + str(others))
    expect("the worker's report says whose it is",
           re.search(r'simprof run \(pid\d+\): 9 steps of the NVTX range "step"', out) is not None
           and re.search(r"simprof run \(pid\d+\): this process's run record: .*run\.pid\d+\.json",
                         out) is not None
           and out.count('simprof run: 20 steps of the NVTX range "step"') == 1, out)
    for f in others:
        os.remove(os.path.join(d, f))
    rc, out = run("run", "--no-fps", "--step", "step", "--json", path, "--", PROGRAM, "20",
                  "forked")
    rec = json.load(open(path))
    expect("a forked copy of the program writes no record and no report",
           rc == 3 and rec["steps"] == 20 and out.count("steps of the NVTX range") == 1
           and os.listdir(d) == ["run.json"], out + str(os.listdir(d)))
    rc, out = run("run", "--no-fps", "--json", path, "--", PROGRAM, "2000", "crash",
                  env={"SIMPROF_RUN_JSON_EVERY_MS": "20"})
    rec = json.load(open(path))
    expect("a crash leaves the last snapshot (final: false, some steps)",
           "last snapshot before the crash" in out and rec["final"] is False
           and 0 < rec["steps"] <= 1000, out + json.dumps(rec))
    rc, out = run("run", "--json", os.path.join(d, "no", "such", "dir.json"), "--", PROGRAM)
    expect("an unwritable --json is refused before the run (exit 2)",
           rc == 2 and "cannot write there" in out, out)

# --trace-steps: a Kineto trace of steps 5..14, the ranges as CPU spans, checked by the session.
with tempfile.TemporaryDirectory() as d:
    rc, out = run("run", "--no-fps", "--trace-steps", "5:15", "--trace-dir", d, "--", PROGRAM, "40")
    path = os.path.join(d, "simprof_trace_0", "rank0.json")
    expect("the trace is written and said", os.path.exists(path) and path in out, out)
    if os.path.exists(path):
        trace = json.load(open(path))
        spans = [e["name"] for e in trace["traceEvents"] if e.get("ph") == "X"]
        expect("steps 5 to 14, each a ProfilerStep span",
               sorted(n for n in spans if n.startswith("ProfilerStep#")) ==
               sorted("ProfilerStep#%d" % i for i in range(5, 15)), str(spans))
        expect("each traced step's stages are spans",
               spans.count("physics") == 10 and spans.count("physics/contacts") == 10
               and spans.count("sensors") == 10, str(spans))
        expect("the trace was checked (causality)",
               trace["otherData"].get("causality", "").startswith("ok"), str(trace["otherData"]))
    rc, out = run("run", "--no-fps", "--trace-steps", "100:200", "--trace-dir", d, "--", PROGRAM,
                  "10")
    expect("a window the program never reached is said", "no trace window ended" in out, out)
def nests(events):
    """Each host thread's complete events nest (Perfetto and HTA read them as one call stack)."""
    tracks = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation"):
            tracks.setdefault((e["pid"], e["tid"]), []).append(
                (round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)))
    for spans in tracks.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
        open_ends = []
        for b, e in spans:
            while open_ends and open_ends[-1] <= b:
                open_ends.pop()
            if open_ends and open_ends[-1] < e:
                return False
            open_ends.append(e)
    return True


# Ranges on another thread: one track each in the trace, beside the step loop's; a range that
# outlasts the one it began in goes to that thread's own overflow track.
with tempfile.TemporaryDirectory() as d:
    rc, out = run("run", "--no-fps", "--step", "step", "--trace-steps", "5:15", "--trace-dir", d,
                  "--", PROGRAM, "40", "threads")
    path = os.path.join(d, "simprof_trace_0", "rank0.json")
    expect("threads: the trace is written", rc == 3 and os.path.exists(path), out)
    if os.path.exists(path):
        events = json.load(open(path))["traceEvents"]
        names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
                 if e.get("name") == "thread_name"}
        x = [e for e in events if e.get("ph") == "X"]
        loop = {e["tid"] for e in x if e["name"].startswith("ProfilerStep#")}
        decode = [e for e in x if e["name"] in ("decode", "parse")]
        expect("threads: one decoder round in each traced step (10 decode, 10 parse)",
               sorted(e["name"] for e in decode) == ["decode"] * 10 + ["parse"] * 10,
               str([e["name"] for e in decode]))
        expect("threads: one step loop track", len(loop) == 1, str(names))
        expect("threads: the decoder's ranges are spans on its own track",
               decode and all(e["cat"] == "user_annotation" and e["tid"] not in loop
                              for e in decode)
               and all(names.get((e["pid"], e["tid"])) == "thread %d" % e["tid"]
                       for e in decode), str(names) + str(decode[:4]))
        kernel = [e for e in x if e["name"] == "kernel"]
        expect("threads: the range that outlasts its parent is on an overflow track",
               len(kernel) == 10 and all("(ranges that cross" in names.get((e["pid"], e["tid"]), "")
                              for e in kernel), str(names))
        expect("threads: every host track nests", nests(events), str(names))
        expect("threads: every tid fits Perfetto's uint32",
               all(0 <= e["tid"] < 2 ** 32 for e in events if isinstance(e.get("tid"), int)),
               str(names))
        steps = [e for e in x if e["name"].startswith("ProfilerStep#")]
        expect("threads: steps 5 to 14", len(steps) == 10, str(len(steps)))

rc, out = run("run", "--trace-steps", "7:3", "--", PROGRAM)
expect("a bad --trace-steps is refused (exit 2)", rc == 2 and "--trace-steps '7:3'" in out, out)

# Ranges as NVTX nests them: start/end ranges, a domain's own stack, a missing pop, SIGUSR1.
rc, out = run("run", "--no-fps", "--step", "frame", "--", PROGRAM, "30", "startend")
expect("start/end ranges are steps and stages, one ending in the next step quietly",
       '30 steps of the NVTX range "frame"' in out and "\ncontacts " in out
       and "\nupload " in out and "pops (or ends) had no such range" not in out, out)
rc, out = run("run", "--no-fps", "--step", "step", "--", PROGRAM, "30", "interleave")
expect("a domain's pop closes its own range (counted), every step whole",
       '30 steps of the NVTX range "step"' in out
       and "30 times a range ended while a range opened after it" in out
       and "pops (or ends) had no such range" not in out, out)
rc, out = run("run", "--no-fps", "--step", "step", "--", PROGRAM, "30", "unbalanced")
expect("a missing pop drops one step, not the rest of the run",
       '29 steps of the NVTX range "step"' in out and "1 ranges were never popped" in out
       and "left out" not in out, out)
rc, out = run("run", "--no-fps", "--step", "step", "--", PROGRAM, "30", "usr1")
expect("SIGUSR1 to simprof: the report so far, and the run goes on",
       rc == 3 and out.count('steps of the NVTX range "step"') == 2
       and "the report so far (SIGUSR1)" in out
       and '30 steps of the NVTX range "step"' in out, out)
expect("the program's own SIGUSR1 handler stays its own",
       "own SIGUSR1 handler ran 1 time(s)" in out, out)
expect("the stage table has p50, p95 and p99", "p50 us     p95 us     p99 us" in out, out)

# Bad input.
rc, out = run("run", "--step", "frame", "--no-fps", "--", PROGRAM, "5")
expect("a --step never pushed is said with what was seen",
       '--step frame: no range of that name was pushed. Ranges seen: "contacts" (5)' in out, out)
rc, out = run("run", "--n-envs", "-3", "--", PROGRAM)
expect("a bad --n-envs is refused (exit 2)", rc == 2 and "--n-envs '-3'" in out, out)
rc, out = run("run", "--no-fps", "--", "true")
expect("a program without NVTX calls is said", rc == 0 and "made no NVTX call" in out, out)
rc, out = run("run", "--no-fps", "--", PROGRAM, "10", "crash")
expect("a crash is said with its signal", rc == 128 + 6 and "killed by signal 6" in out, out)
rc, out = run("run", "--", "/nonexistent/program")
expect("a command that cannot run: 127 and why", rc == 127 and "cannot run" in out, out)

with tempfile.TemporaryDirectory() as d:
    rc, out = run("run", "--json", d, "--", PROGRAM)
    expect("a --json that is a directory is refused and left alone",
           rc == 2 and "is a directory" in out and os.path.isdir(d), out)
rc, out = run("frun", "--", PROGRAM)
expect("an unknown command is named", rc == 2 and "unknown command 'frun'" in out, out)
rc, out = run("run", PROGRAM, "5")
expect("a command without -- is said so", rc == 2 and "put the command after --" in out, out)
rc, out = run("run", "--trace-dir", "t", "--", PROGRAM)
expect("--trace-dir alone is refused", rc == 2 and "needs --trace-steps" in out, out)
rc, out = run("run", "--no-fps", "--", PROGRAM, "5", env={"SIMPROF_RUN_JSON_EVERY_MS": "0"})
expect("a tool that refused to start says why, and nothing false after",
       "could not start" in out and "SIMPROF_RUN_JSON_EVERY_MS = '0'" in out
       and "made no NVTX call" not in out, out)

# The launch hook: preloaded by default where it was built (beside the tool), in front of the
# program's own LD_PRELOAD; never with --gpu-launches cupti or --no-gpu.
show = ["sh", "-c", 'echo "preload=[$LD_PRELOAD]"']
own = {"LD_PRELOAD": "libown.so"}
rc, out = run("run", "--gpu-launches", "hook", "--no-fps", "--", *show, env=own)
built = os.environ.get("SIMPROF_EXPECT_HOOK") == "1"  # set by ctest: built with CUDA
expect("--gpu-launches hook: preloaded where built, else refused naming the file (exit 2)",
       re.search(r"preload=\[[^]]*/libsimprof_launch_hook\.so:libown\.so\]", out) if built
       else rc == 2 and "libsimprof_launch_hook.so (it is built with the CUDA backend)" in out,
       out)
rc, out = run("run", "--no-fps", "--", *show, env=own)
expect("the default preloads the hook where it was built, and keeps the program's own",
       re.search(r"preload=\[[^]]*/libsimprof_launch_hook\.so:libown\.so\]", out) if built
       else "preload=[libown.so]" in out, out)
# ... behind a sanitizer's runtime that the program's own list begins with (it must come first).
rc, out = run("run", "--no-fps", "--", *show, env={"LD_PRELOAD": "/x/libasan.so.8"})
expect("the hook goes behind a sanitizer runtime preloaded first",
       re.search(r"preload=\[/x/libasan\.so\.8:[^]]*/libsimprof_launch_hook\.so\]", out) if built
       else "preload=[/x/libasan.so.8]" in out, out)
for off in (["--gpu-launches", "cupti"], ["--no-gpu"]):
    rc, out = run("run", *off, "--no-fps", "--", *show, env=own)
    expect("%s: nothing preloaded" % " ".join(off), "preload=[libown.so]" in out, out)

if failures:
    print("\n\n".join(failures))
    sys.exit(1)
print("simprof run: all checks passed")
