#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs a Markdown page's shell blocks as a new user would, for ctest (label docs).

Every ```sh (or ```bash, ```shell) block of the page runs, in the page's order, as one `sh -e -x`
script in a fresh scratch directory, unless the line before its fence marks it:

    <!-- shell: skip (why) -->    not run; the rest of the comment says why

The page must hold the line `git clone <simprof> && cd simprof` (the placeholder for simprof's
repository): it becomes a `git clone --quiet` of the source tree under test (its committed HEAD: an
uncommitted change is not in the clone), or, where the source is not a git checkout, a copy of it
without its build trees. The commands run with HOME set to the scratch directory's home/ (so `~` and
`$HOME` stay inside it), without PYTHONPATH or SIMPROF_LIBRARY from the caller's environment, with
the CMake that configured this build first on PATH, python3 being PYTHON where given (a python3 that
can `pip install .` offline; the first python3 on PATH may not), and CMAKE_BUILD_PARALLEL_LEVEL=2
unless set.

The test passes when every command succeeds and the last line the commands print (the page's final
`python3 -c "import simprof; print(...)"`) holds simprof's version as one of its words.

usage: run_shell_blocks.py SOURCE_DIR PAGE.md SCRATCH_DIR VERSION [CMAKE_COMMAND [PYTHON]]
"""
import os
import re
import shlex
import shutil
import subprocess
import sys

FENCE = re.compile(r"^```(sh|bash|shell)\s*$")
MARK = re.compile(r"^<!--\s*shell:\s*(.*?)\s*-->\s*$")
CLONE = re.compile(r"^git clone <simprof> && cd simprof\s*(#.*)?$")


def blocks(path):
    """(first line number, lines) of each shell block that runs."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if not FENCE.match(lines[i].strip()):
            i += 1
            continue
        mark = MARK.match(lines[i - 1].strip()) if i > 0 else None
        if mark and mark.group(1).split()[:1] != ["skip"]:
            sys.exit(f"{path}:{i}: unknown shell mark '{mark.group(1)}' (expected 'skip (why)')")
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        if j == len(lines):
            sys.exit(f"{path}:{i + 1}: code block never closed")
        if not mark:
            yield i + 2, lines[i + 1:j]
        i = j + 1


def is_git_checkout(source):
    if not shutil.which("git"):
        return False
    r = subprocess.run(["git", "-C", source, "rev-parse", "--show-toplevel"],
                       capture_output=True, text=True)
    return r.returncode == 0 and os.path.realpath(r.stdout.strip()) == os.path.realpath(source)


def main():
    if len(sys.argv) not in (5, 6, 7):
        sys.exit(__doc__.rsplit("usage: ", 1)[1])
    source, page, scratch, version = (os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]),
                                      os.path.abspath(sys.argv[3]), sys.argv[4])
    cmake = sys.argv[5] if len(sys.argv) >= 6 else ""
    python = sys.argv[6] if len(sys.argv) == 7 else ""
    rel = os.path.relpath(page, source)

    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(os.path.join(scratch, "home"))
    if is_git_checkout(source):
        get = "git clone --quiet %s simprof && cd simprof" % shlex.quote(source)
        dirty = subprocess.run(["git", "-C", source, "status", "--porcelain", "-uno"],
                               capture_output=True, text=True).stdout.strip()
        if dirty:
            print(f"note: {source} has uncommitted changes; the clone is its HEAD without them")
    else:
        shutil.copytree(source, os.path.join(scratch, "simprof"), symlinks=True,
                        ignore=lambda d, names: [n for n in names if n.startswith("build") or
                                                 n in (".git", "__pycache__")])
        get = "cd simprof"

    script, clones, count = ["# Generated from %s by tests/docs/run_shell_blocks.py." % rel], 0, 0
    for first, body in blocks(page):
        script.append("# %s:%d" % (rel, first))
        for line in body:
            if CLONE.match(line.strip()):
                line, clones = get, clones + 1
            if line.strip() and not line.strip().startswith("#"):
                count += 1
            script.append(line)
    if clones != 1:
        sys.exit(f"{rel}: expected the line 'git clone <simprof> && cd simprof' once in its shell "
                 f"blocks, found it {clones} times")
    path = os.path.join(scratch, "commands.sh")
    open(path, "w", encoding="utf-8").write("\n".join(script) + "\n")

    env = dict(os.environ)
    for name in ("PYTHONPATH", "SIMPROF_LIBRARY"):
        env.pop(name, None)
    env["HOME"] = os.path.join(scratch, "home")
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    if cmake:
        env["PATH"] = os.path.dirname(os.path.abspath(cmake)) + os.pathsep + env.get("PATH", "")
    if python:  # python3 alone, ahead of the CMake directory (which may hold a python3 of its own)
        os.makedirs(os.path.join(scratch, "bin"))
        os.symlink(python, os.path.join(scratch, "bin", "python3"))
        env["PATH"] = os.path.join(scratch, "bin") + os.pathsep + env.get("PATH", "")
    print(f"running {count} commands of {rel} in {scratch} (the script: {path})", flush=True)
    proc = subprocess.Popen(["sh", "-e", "-x", path], cwd=scratch, env=env, stdout=subprocess.PIPE,
                            text=True)
    last = ""
    for line in proc.stdout:
        sys.stdout.write(line)
        if line.strip():
            last = line.strip()
    rc = proc.wait()
    sys.stdout.flush()
    if rc != 0:
        sys.exit(f"{rel}: its commands failed (exit status {rc}); see above")
    if version not in last.split():
        sys.exit(f"{rel}: the last line printed is {last!r}, without simprof's version {version}")
    print(f"docs shell ok: {rel}'s {count} commands, ending with {last!r}")


if __name__ == "__main__":
    main()
