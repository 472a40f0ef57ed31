#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`pip install .`'s wheel checked as a user gets it, for ctest (python.wheel, label python).

1. The source tree's files (git's tracked and untracked-but-not-ignored files, so an uncommitted
   change is in; or, outside a git checkout, the tree without its build trees) are copied to
   SCRATCH_DIR/src, and PYTHON -m pip wheel --no-build-isolation builds the wheel from there (no
   package index: PYTHON's own setuptools and wheel build it; setup.py runs CMake).
2. The wheel is platform-specific (py3-none-<platform>) and holds exactly the package's modules
   (python/simprof/*.py), py.typed and libsimprof_c.so, and its metadata; with SIMPROF_EXPECT_RUN
   set (ctest sets it where the build has `simprof run`), also the simprof command and its NVTX
   tool, and the venv gets a working `simprof` command (which profiles SIMPROF_NVTX_PROGRAM,
   where ctest gives it, with the package's own tool).
3. It is installed into a fresh venv (--system-site-packages: the system's pytest and, if there,
   numpy; nothing from an index); from a directory where the source's python/ is not importable,
   `import simprof` must load the venv's copy, whose library's dependencies all resolve (ldd), and
   the package's pytest suite (python/tests) runs against it.
4. `pip uninstall -y simprof` leaves no file or directory named simprof* in the venv.

The environment passes through (SIMPROF_CUDA, CMAKE_CUDA_ARCHITECTURES, SIMPROF_CMAKE_ARGS,
CMAKE_BUILD_PARALLEL_LEVEL choose the build; setup.py says how), without PYTHONPATH and
SIMPROF_LIBRARY.

usage: wheel_check.py SOURCE_DIR SCRATCH_DIR PYTHON
"""
import glob
import os
import shutil
import subprocess
import sys
import time
import zipfile


def run(cmd, **kw):
    print("+ " + " ".join(cmd), flush=True)
    t0 = time.monotonic()
    r = subprocess.run(cmd, **kw)
    if r.returncode != 0:
        sys.exit("wheel check: %s failed (exit status %d)" % (" ".join(cmd), r.returncode))
    print("  (%.1f s)" % (time.monotonic() - t0), flush=True)
    return r


def copy_source(source, dest):
    """The files a clone would have plus the uncommitted and untracked ones, without build trees."""
    git = shutil.which("git")
    top = ""
    if git:
        r = subprocess.run([git, "-C", source, "rev-parse", "--show-toplevel"], capture_output=True,
                           text=True)
        top = r.stdout.strip() if r.returncode == 0 else ""
    if top and os.path.realpath(top) == os.path.realpath(source):
        names = subprocess.run([git, "-C", source, "ls-files", "-z", "--cached", "--others",
                                "--exclude-standard"], capture_output=True, text=True,
                               check=True).stdout.split("\0")
        for name in filter(None, names):
            src = os.path.join(source, name)
            if os.path.lexists(src):  # a tracked file deleted in the working tree is left out
                os.makedirs(os.path.dirname(os.path.join(dest, name)), exist_ok=True)
                shutil.copy2(src, os.path.join(dest, name), follow_symlinks=False)
    else:
        shutil.copytree(source, dest, symlinks=True,
                        ignore=lambda d, names: [n for n in names if n.startswith("build") or
                                                 n in (".git", "__pycache__")])


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.rsplit("usage: ", 1)[1])
    source, scratch, python = (os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]),
                               sys.argv[3])
    shutil.rmtree(scratch, ignore_errors=True)
    src, dist, venv, cwd = (os.path.join(scratch, d) for d in ("src", "dist", "venv", "run"))
    os.makedirs(cwd)
    env = dict(os.environ)
    for name in ("PYTHONPATH", "SIMPROF_LIBRARY"):
        env.pop(name, None)
    # No index is reached: no version check, no download (the wheel has no dependencies), and the
    # user's pip cache is left alone.
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INDEX="1", PIP_NO_CACHE_DIR="1",
               SIMPROF_SHOW_FPS="0")

    copy_source(source, src)
    t0 = time.monotonic()
    run([python, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", dist, src],
        env=env)
    build_s = time.monotonic() - t0

    wheels = glob.glob(os.path.join(dist, "simprof-*.whl"))
    if len(wheels) != 1:
        sys.exit("wheel check: expected one simprof-*.whl in %s, found %s" % (dist, wheels))
    wheel = wheels[0]
    tag = os.path.basename(wheel)[:-4].split("-")[-3:]
    if tag[:2] != ["py3", "none"] or tag[2] == "any":
        sys.exit("wheel check: %s is tagged %s (expected py3-none-<platform>: it carries a shared "
                 "library)" % (os.path.basename(wheel), "-".join(tag)))
    modules = {"simprof/" + os.path.basename(p)
               for p in glob.glob(os.path.join(src, "python", "simprof", "*.py"))}
    expected = modules | {"simprof/py.typed", "simprof/libsimprof_c.so"}
    run_command = bool(os.environ.get("SIMPROF_EXPECT_RUN"))
    if run_command:
        expected |= {"simprof/simprof", "simprof/libsimprof_nvtx.so"}
    hook = bool(os.environ.get("SIMPROF_EXPECT_HOOK"))  # built with the CUDA backend
    if hook:
        expected.add("simprof/libsimprof_launch_hook.so")
    names = zipfile.ZipFile(wheel).namelist()
    package = {n for n in names if not n.split("/")[0].endswith(".dist-info")}
    if package != expected:
        sys.exit("wheel check: %s holds %s (expected %s; missing %s, extra %s)" %
                 (os.path.basename(wheel), sorted(package), sorted(expected),
                  sorted(expected - package), sorted(package - expected)))

    run([python, "-m", "venv", "--system-site-packages", venv], env=env)
    vpython = os.path.join(venv, "bin", "python")
    run([vpython, "-m", "pip", "install", "--no-deps", wheel], env=env)
    where = run([vpython, "-c", "import os, simprof; print(os.path.realpath(simprof.__file__)); "
                 "print(simprof.version(), simprof.has_cuda())"],
                cwd=cwd, env=env, capture_output=True, text=True).stdout.split("\n")
    print("  " + "\n  ".join(where).rstrip(), flush=True)
    if not where[0].startswith(os.path.realpath(venv) + os.sep):
        sys.exit("wheel check: import simprof loaded %s (expected the copy under %s)" %
                 (where[0], venv))
    here = os.path.dirname(where[0])
    binaries = (["libsimprof_c.so"] + (["simprof", "libsimprof_nvtx.so"] if run_command else []) +
                (["libsimprof_launch_hook.so"] if hook else []))
    for library in (os.path.join(here, name) for name in binaries):
        if not shutil.which("ldd"):
            break
        deps = run(["ldd", library], capture_output=True, text=True).stdout
        missing = [line.strip() for line in deps.splitlines() if "not found" in line]
        if missing:
            sys.exit("wheel check: %s's dependencies do not all resolve: %s" % (library, missing))
    if run_command:  # the console script pip made, in front of the bundled command
        usage = run([os.path.join(venv, "bin", "simprof"), "run", "--help"], cwd=cwd, env=env,
                    capture_output=True, text=True).stderr
        if "usage: simprof run" not in usage:
            sys.exit("wheel check: the venv's simprof command printed %r" % usage)
        program = os.environ.get("SIMPROF_NVTX_PROGRAM")
        if program:  # and it profiles a program with the package's own NVTX tool
            clean = {k: v for k, v in env.items() if k != "SIMPROF_NVTX_LIB"}
            p = subprocess.run([os.path.join(venv, "bin", "simprof"), "run", "--no-fps", "--",
                                program, "20"], cwd=cwd, env=clean, capture_output=True, text=True)
            if p.returncode != 3 or '19 steps of the NVTX range "step"' not in p.stderr:
                sys.exit("wheel check: the venv's simprof run returned %d and printed %r" %
                         (p.returncode, p.stderr))

    run([vpython, "-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.join(src, "python",
                                                                            "tests")],
        cwd=cwd, env=env)

    run([vpython, "-m", "pip", "uninstall", "-y", "simprof"], env=env)
    left = []
    for d, dirs, files in os.walk(venv):
        left += [os.path.join(d, n) for n in dirs + files if n.lower().startswith("simprof")]
    if left:
        sys.exit("wheel check: pip uninstall left %s" % left)
    print("wheel check ok: %s (built in %.0f s), imported from the venv, pytest passed, "
          "uninstalled without a trace" % (os.path.basename(wheel), build_s))


if __name__ == "__main__":
    main()
