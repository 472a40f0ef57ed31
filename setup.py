# SPDX-License-Identifier: MIT
"""`pip install .`: the simprof package (python/simprof/*.py, py.typed) with libsimprof_c.so built by
CMake (target simprof_c) and copied next to its __init__.py, where simprof/_lib.py loads it. The
metadata is in pyproject.toml.

The build reads the environment:
    SIMPROF_CUDA                ON, OFF or AUTO (default: the CUDA backend when nvcc is found)
    CMAKE_CUDA_ARCHITECTURES    e.g. "80;90" or "80,90" (CMakeLists.txt's default: 90)
    SIMPROF_CMAKE_ARGS          more arguments for CMake's configure step, split as a shell would
    CMAKE_BUILD_PARALLEL_LEVEL  build jobs (default: every core)

CMake builds under setuptools' build_temp, in build-python/ (not build/: that is where users keep
their own CMake builds, and .gitignore ignores /build*/).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

try:  # setuptools >= 70.1 has its own; before, the wheel package's
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:  # no wheel to build (setup.py build, say): no tag to set
        bdist_wheel = None

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD_BASE = "build-python"
CMAKE_MIN = (3, 24)  # cmake_minimum_required in CMakeLists.txt
LIBRARY = "libsimprof_c.so"
# python -m simprof compare / run (src/run): the files of the targets CMake lists.
RUN_FILES = {"simprof": "simprof", "simprof_nvtx": "libsimprof_nvtx.so",
             "simprof_launch_hook": "libsimprof_launch_hook.so"}


def fail(message):
    sys.exit("simprof: " + message)


def find_cmake():
    cmake = shutil.which("cmake")
    if not cmake:
        fail("building the package needs CMake >= %d.%d, and there is no cmake on PATH (Debian: "
             "apt-get install cmake; or pip install cmake)" % CMAKE_MIN)
    out = subprocess.run([cmake, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"version (\d+)\.(\d+)", out)
    if not m or (int(m.group(1)), int(m.group(2))) < CMAKE_MIN:
        fail("building the package needs CMake >= %d.%d; %s says %r" %
             (CMAKE_MIN + (cmake, out.splitlines()[0] if out else "nothing")))
    return cmake


def configure_args():
    cuda = os.environ.get("SIMPROF_CUDA", "AUTO").strip().upper() or "AUTO"
    if cuda not in ("ON", "OFF", "AUTO"):
        fail("SIMPROF_CUDA=%r (expected ON, OFF or AUTO)" % os.environ["SIMPROF_CUDA"])
    args = ["-DCMAKE_BUILD_TYPE=Release", "-DSIMPROF_CUDA=" + cuda, "-DSIMPROF_C_API=ON",
            # the library alone: no tests, benchmarks or examples (nor their dependencies), and no
            # install rules (the wheel is the install)
            "-DSIMPROF_BUILD_TESTS=OFF", "-DSIMPROF_BUILD_BENCH=OFF", "-DSIMPROF_BUILD_EXAMPLES=OFF",
            "-DSIMPROF_INSTALL=OFF"]
    archs = os.environ.get("CMAKE_CUDA_ARCHITECTURES", "").strip()
    if archs:
        args.append("-DCMAKE_CUDA_ARCHITECTURES=" + archs.replace(",", ";"))
    return args + shlex.split(os.environ.get("SIMPROF_CMAKE_ARGS", ""))


class BuildPyWithLibrary(build_py):
    """build_py, then libsimprof_c.so built by CMake into the built package."""

    def run(self):
        super().run()
        cmake = find_cmake()
        build_dir = os.path.abspath(os.path.join(self.get_finalized_command("build").build_temp,
                                                 "cmake"))
        cache = os.path.join(build_dir, "CMakeCache.txt")
        if os.path.exists(cache):  # a cache of another checkout (the tree moved) stops CMake
            with open(cache, encoding="utf-8", errors="replace") as f:
                home = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", f.read(), re.M)
            if not home or os.path.realpath(home.group(1)) != os.path.realpath(ROOT):
                shutil.rmtree(build_dir)
        configure = [cmake, "-S", ROOT, "-B", build_dir]
        if (not os.path.exists(cache) and shutil.which("ninja") and
                not os.environ.get("CMAKE_GENERATOR")):
            configure += ["-G", "Ninja"]
        configure += configure_args()
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)
        build = [cmake, "--build", build_dir, "--target", "simprof_c", "-j", jobs]
        for command in (configure, build):
            print(" ".join(shlex.quote(c) for c in command), flush=True)
            rc = subprocess.run(command).returncode
            if rc != 0:
                fail("%s failed (exit status %d); CMake's output is above (pip install -v shows "
                     "it)" % (" ".join(command[:2]), rc))
        # The simprof command and its NVTX tool (src/run), where this build has them.
        self.extras = []
        listed = os.path.join(build_dir, "simprof_run_targets.txt")
        if os.path.exists(listed):  # "simprof simprof_nvtx", or "simprof" without NVTX headers
            with open(listed) as f:
                targets = f.read().split()
            command = [cmake, "--build", build_dir, "--target"] + targets + ["-j", jobs]
            print(" ".join(shlex.quote(c) for c in command), flush=True)
            if subprocess.run(command).returncode != 0:
                fail("building the simprof command failed; CMake's output is above")
            self.extras = [RUN_FILES[t] for t in targets]
        for name in [LIBRARY] + self.extras:
            built = os.path.join(build_dir, "python", "simprof", name)  # src/c, src/run
            if not os.path.exists(built):
                fail("CMake built %s, but %s is not there" % (name, built))
            self.copy_file(built, os.path.join(self.build_lib, "simprof", name))

    def get_outputs(self, include_bytecode=1):
        return super().get_outputs(include_bytecode) + [
            os.path.join(self.build_lib, "simprof", name)
            for name in [LIBRARY] + getattr(self, "extras", [])]


class BinaryDistribution(Distribution):
    """A package that carries a shared library: its wheel is platform-specific."""

    def has_ext_modules(self):
        return True


cmdclass = {"build_py": BuildPyWithLibrary}
if bdist_wheel is not None:

    class BdistWheel(bdist_wheel):
        """Tagged py3-none-<platform>: the library is loaded through ctypes, not built against one
        Python's C API, so one wheel serves every Python 3 (>= 3.8) of its platform."""

        def get_tag(self):
            return ("py3", "none", super().get_tag()[2])

    cmdclass["bdist_wheel"] = BdistWheel

os.makedirs(os.path.join(ROOT, BUILD_BASE), exist_ok=True)  # egg_info wants egg_base to exist
setup(
    packages=["simprof"],
    package_dir={"simprof": "python/simprof"},
    package_data={"simprof": ["py.typed"]},
    distclass=BinaryDistribution,
    cmdclass=cmdclass,
    options={"build": {"build_base": BUILD_BASE}, "egg_info": {"egg_base": BUILD_BASE}},
    zip_safe=False,
)
