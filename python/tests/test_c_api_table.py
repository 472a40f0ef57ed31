# SPDX-License-Identifier: MIT
"""One C API table: every function simprof.h (and simprof_cuda.h) declares has a ctypes prototype
in simprof._lib whose every argument type and result type is the C one's (ctype_of); every struct
they define has a ctypes Structure with the same fields, in order, of the same types; and the C
API's CUDA functions (cuda.cpp, cuda_timers.cpp, gpu_profile.cpp) have a stub each in
cuda_unavailable.cpp, which defines nothing else. A drift between the copies fails here, naming the
function or the field."""
import ctypes
import os
import re

import pytest

from simprof import _lib
from simprof._lib import FPS_CALLBACK, lib

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


SCALARS = {"int": ctypes.c_int, "int64_t": ctypes.c_int64, "uint64_t": ctypes.c_uint64,
           "double": ctypes.c_double, "size_t": ctypes.c_size_t}


# Parameters _lib.py passes as an address on purpose: a device or host buffer's pointer as numpy,
# torch and CuPy give it (an int), not a ctypes array.
ADDRESSES = {("simprof_timer_stats_update", 1)}  # const uint64_t* ticks: (rows, n_envs) counters


def ctype_of(param):
    """The ctypes type a C parameter (or result) type must have in _lib.py, or None when the table
    has no rule for it (a new kind of type: add its rule here)."""
    text = re.sub(r"\bconst\b", " ", param)
    stars = text.count("*")
    words = text.replace("*", " ").split()
    if len(words) > 1:  # "int n", "const char* name": the last word is the parameter's name
        words = words[:-1]
    base = " ".join(words)
    if base == "char":
        return {1: ctypes.c_char_p, 2: ctypes.POINTER(ctypes.c_char_p)}.get(stars)
    if base in SCALARS:
        return {0: SCALARS[base], 1: ctypes.POINTER(SCALARS[base])}.get(stars)
    if base == "simprof_fps_callback" and stars == 0:
        return FPS_CALLBACK
    if base == "void" or base.startswith("simprof_") or base == "cudaStream_t":
        # handles, options structs, streams and untyped memory: pointers to the C side
        if base == "cudaStream_t":
            stars += 1
        return {1: ctypes.c_void_p, 2: ctypes.POINTER(ctypes.c_void_p)}.get(stars)
    return None


def parameters(text):
    text = re.sub(r"\([^)]*\)", "", text).strip()  # a function pointer's own list
    return [] if text in ("", "void") else [p.strip() for p in text.split(",")]


def declared():
    """name -> (result type, parameter declarations) of every function simprof.h and
    simprof_cuda.h declare."""
    out = {}
    for statement in " ".join(source(h) for h in HEADERS).split(";"):
        statement = re.split(r"[{}]|#[^\n]*\n", statement)[-1].strip()
        m = DECL.match(statement)
        if not m or statement.startswith("typedef"):
            continue
        out[m.group(2)] = (" ".join(m.group(1).replace("*", " * ").split()),
                           parameters(m.group(3)))
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
    for name, (result, params) in sorted(table.items()):
        if name == "simprof_fps_callback":
            continue
        f = getattr(lib, name)  # AttributeError: the library does not export it
        if f.argtypes is None:
            missing.append(name)
            continue
        if len(f.argtypes) != len(params):
            wrong.append("%s: %d parameters in simprof.h, %d in _lib.py" %
                         (name, len(params), len(f.argtypes)))
            continue
        for i, (param, got) in enumerate(zip(params, f.argtypes)):
            want = ctypes.c_void_p if (name, i) in ADDRESSES else ctype_of(param)
            if want is None:
                wrong.append("%s: parameter %d '%s' has no rule in ctype_of()" % (name, i, param))
            elif got is not want:
                wrong.append("%s: parameter %d is '%s' in simprof.h, %s in _lib.py" %
                             (name, i, param, got.__name__))
        want = None if result == "void" else ctype_of(result + " r")
        if result == "simprof_status":
            want = ctypes.c_int
        if result != "void" and want is None:
            wrong.append("%s: result '%s' has no rule in ctype_of()" % (name, result))
        elif f.restype is not want:
            wrong.append("%s: returns '%s' in simprof.h, %s in _lib.py" %
                         (name, result, getattr(f.restype, "__name__", f.restype)))
    assert not missing, "declared in simprof.h, no prototype in _lib.py: %s" % missing
    assert not wrong, "\n".join(wrong)


def test_every_cuda_function_has_a_stub_without_cuda(table):
    cuda = defined("cuda.cpp") | defined("cuda_timers.cpp") | defined("gpu_profile.cpp")
    stubs = defined("cuda_unavailable.cpp")
    assert cuda - stubs == set(), "no stub in cuda_unavailable.cpp: %s" % sorted(cuda - stubs)
    assert stubs - cuda == set(), "a stub with no CUDA function: %s" % sorted(stubs - cuda)
    assert cuda <= set(table), "defined, not declared in simprof.h: %s" % sorted(cuda - set(table))


STRUCT = re.compile(r"typedef struct (simprof_[a-z_0-9]+) \{(.*?)\} \1;", re.S)
FIELD_TYPES = {"int": ctypes.c_int, "int64_t": ctypes.c_int64, "uint64_t": ctypes.c_uint64,
               "uint32_t": ctypes.c_uint32, "double": ctypes.c_double, "size_t": ctypes.c_size_t,
               "char*": ctypes.c_char_p, "int*": ctypes.POINTER(ctypes.c_int)}


def c_structs():
    """{struct name: [(field, C type)]} of the structs the headers define."""
    out = {}
    for path in HEADERS:
        for name, body in STRUCT.findall(source(path)):
            fields = []
            for decl in filter(None, (d.strip() for d in body.split(";"))):
                decl = re.sub(r"\bconst\b", " ", decl).replace("*", "* ")
                words = decl.split()
                fields.append((words[-1], "".join(words[:-1])))
            out[name] = fields
    return out


def py_structs():
    """{struct name: its ctypes Structure} of _lib.py (each names its C struct in its docstring)."""
    out = {}
    for value in vars(_lib).values():
        if isinstance(value, type) and issubclass(value, ctypes.Structure) and value.__doc__:
            out[value.__doc__.strip().rstrip(".")] = value
    return out


def test_every_struct_has_a_structure_with_its_fields():
    c, py = c_structs(), py_structs()
    assert len(c) >= 12, "the headers' structs were not found: %s" % sorted(c)
    assert set(c) == set(py), "C only: %s; Python only: %s" % (sorted(set(c) - set(py)),
                                                               sorted(set(py) - set(c)))
    wrong = []
    for name, fields in sorted(c.items()):
        got = [(f, t) for f, t in py[name]._fields_]
        if [f for f, _ in fields] != [f for f, _ in got]:
            wrong.append("%s: fields %s in C, %s in _lib.py" %
                         (name, [f for f, _ in fields], [f for f, _ in got]))
            continue
        for (field, ctype), (_, t) in zip(fields, got):
            want = FIELD_TYPES.get(ctype)
            if want is None:
                wrong.append("%s.%s: '%s' has no rule in FIELD_TYPES" % (name, field, ctype))
            elif t is not want:
                wrong.append("%s.%s: '%s' in C, %s in _lib.py" % (name, field, ctype, t.__name__))
    assert not wrong, "\n".join(wrong)
