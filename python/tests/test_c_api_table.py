# SPDX-License-Identifier: MIT
"""One C API table: every function simprof.h (and simprof_cuda.h) declares has a ctypes prototype
in simprof._lib with as many arguments and a matching result type, and the C API's CUDA functions
(cuda.cpp, cuda_timers.cpp, gpu_profile.cpp) have a stub each in cuda_unavailable.cpp, which
defines nothing else. A drift between the three copies fails here, naming the function."""
import os
import re

import pytest

from simprof._lib import lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.path.join(ROOT, "include", "simprof", "c", "simprof.h")
HEADERS = (HEADER, os.path.join(ROOT, "include", "simprof", "c", "simprof_cuda.h"))
C_DIR = os.path.join(ROOT, "src", "c")

DECL = re.compile(r"^((?:const\s+)?[A-Za-z_][A-Za-z_0-9]*[\s*]+)(simprof_[A-Za-z_0-9]+)\s*\((.*)\)$",
                  re.S)
DEFN = re.compile(r"^[A-Za-z_][A-Za-z_0-9 ]*[\s*]+(simprof_[A-Za-z_0-9]+)\s*\(", re.M)


def source(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def declared():
    """name -> (result type, number of parameters) of every function simprof.h and simprof_cuda.h
    declare."""
    out = {}
    for statement in " ".join(source(h) for h in HEADERS).split(";"):
        statement = re.split(r"[{}]|#[^\n]*\n", statement)[-1].strip()
        m = DECL.match(statement)
        if not m or statement.startswith("typedef"):
            continue
        params = re.sub(r"\([^)]*\)", "", m.group(3)).strip()  # a function pointer's own list
        n = 0 if params in ("", "void") else params.count(",") + 1
        out[m.group(2)] = (" ".join(m.group(1).replace("*", " * ").split()), n)
    return out


def defined(name):
    return set(DEFN.findall(source(os.path.join(C_DIR, name))))


@pytest.fixture(scope="module")
def table():
    if not os.path.exists(HEADER):
        pytest.skip("simprof's sources are not beside this test (an installed package's tests)")
    t = declared()
    assert len(t) > 100, "the parser found %d declarations in simprof.h" % len(t)
    return t


def test_every_declared_function_has_its_python_prototype(table):
    missing, wrong = [], []
    for name, (result, n) in sorted(table.items()):
        if name == "simprof_fps_callback":
            continue
        f = getattr(lib, name)  # AttributeError: the library does not export it
        if f.argtypes is None:
            missing.append(name)
            continue
        if len(f.argtypes) != n:
            wrong.append("%s: %d parameters in simprof.h, %d in _lib.py" % (name, n,
                                                                              len(f.argtypes)))
        want = {"void": type(None), "simprof_status": int, "int": int, "uint64_t": int,
                "double": float}.get(result)
        got = f.restype
        if want is type(None) and got is not None:
            wrong.append("%s: returns void in simprof.h, %s in _lib.py" % (name, got))
        if want in (int, float) and (got is None or got._type_ not in
                                     ({int: "ilqLQ", float: "d"}[want])):
            wrong.append("%s: returns %s in simprof.h, %s in _lib.py" % (name, result, got))
    assert not missing, "declared in simprof.h, no prototype in _lib.py: %s" % missing
    assert not wrong, "\n".join(wrong)


def test_every_cuda_function_has_a_stub_without_cuda(table):
    cuda = defined("cuda.cpp") | defined("cuda_timers.cpp") | defined("gpu_profile.cpp")
    stubs = defined("cuda_unavailable.cpp")
    assert cuda - stubs == set(), "no stub in cuda_unavailable.cpp: %s" % sorted(cuda - stubs)
    assert stubs - cuda == set(), "a stub with no CUDA function: %s" % sorted(stubs - cuda)
    assert cuda <= set(table), "defined, not declared in simprof.h: %s" % sorted(cuda - set(table))
