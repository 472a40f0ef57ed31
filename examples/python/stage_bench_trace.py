# SPDX-License-Identifier: MIT
"""torch_stage_bench.py's reading of a CUPTI trace: each stage's time from the kernel records, and
the stage columns of its table. Pure Python (json), no GPU."""
import json

STAMP_KERNELS = ("stamp_kernel", "begin_kernel", "publish_kernel")


def cupti_stage_means(path, counts):
    """Per stage, the mean over the traced steps of its time from CUPTI's kernel records, by two
    rules. "kernels": the first stage from its first kernel's start, the others from the end of the
    stage before, to the stage's last kernel's end. "boundaries" (eager steps, whose stamps sit on
    the stream in order): from the end of the stamp kernel just before the stage's first kernel to
    the start of the stamp kernel just after its last one: where the GPU reached the stage's
    boundaries, with the stamps' own time left out, as the device timer takes it out. None where a
    step's stamps do not sit next to its stages (a graph's stamps are leaves beside the work)."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    every = sorted((e for e in doc["traceEvents"]
                    if e.get("ph") == "X" and e.get("cat") == "kernel"
                    and "publish_kernel" not in e.get("name", "")),
                   key=lambda e: e["ts"])
    is_stamp = [any(s in e.get("name", "") for s in STAMP_KERNELS) for e in every]
    work = [i for i, st in enumerate(is_stamp) if not st]  # indices into `every`
    per_step = sum(counts)
    if len(work) % per_step:
        raise SystemExit("torch_stage_bench: %d kernels in %s, not a multiple of %d"
                         % (len(work), path, per_step))
    sums = [0.0] * len(counts)
    bounds = [0.0] * len(counts)
    bounded = True
    n = len(work) // per_step
    for s in range(n):
        k = work[s * per_step:(s + 1) * per_step]
        at = 0
        prev_end = None
        for i, c in enumerate(counts):
            first, last = k[at], k[at + c - 1]
            begin = every[first]["ts"] if prev_end is None else prev_end
            end = max(every[j]["ts"] + every[j]["dur"] for j in k[at:at + c])
            sums[i] += (end - begin) * 1e-6
            prev_end = end
            if first > 0 and is_stamp[first - 1] and last + 1 < len(every) and is_stamp[last + 1]:
                b = every[first - 1]["ts"] + every[first - 1]["dur"]
                # A stamp launched as a programmatic dependent may start (and wait) before the
                # kernel ahead of it ends: the stage ends no earlier than its kernels.
                e = max(every[last + 1]["ts"], end)
                bounds[i] += (e - b) * 1e-6
            else:
                bounded = False
            at += c
    return ([x / n for x in sums], [x / n for x in bounds] if bounded else None, n,
            doc.get("otherData", {}).get("causality", ""))


def stages_met(r):
    """Every stage within its target, and every traced step joined."""
    return all(s["ok"] for s in r["stages"]) and r["joined_steps"] == r["traced_steps"]


def stages_text(r):
    """'physics device/CUPTI[/[boundaries]] (diff %)' for each stage of a result."""
    return "  ".join("%s %.1f/%.1f%s (%+.1f %%)" % (
        s["stage"], s["device_us"], s["cupti_us"],
        "" if s["rule"] == "kernels" else "/[%.1f]" % s["cupti_boundaries_us"], s["diff_pct"])
        for s in r["stages"])
