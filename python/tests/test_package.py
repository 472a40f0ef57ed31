# SPDX-License-Identifier: MIT
"""The package's layout: every public name resolves from `import simprof`, and every module of the
package imports as simprof.<module> (the build tree and cmake --install copy every *.py)."""
import glob
import importlib
import inspect
import os

import simprof

# The modules of the package (python/simprof/*.py but __init__); a new one is added here.
MODULES = {"_lib", "errors", "core", "timers", "trace", "memory", "distributed", "cuda", "gpu",
           "kernel_timer", "stopwatch"}


def test_every_public_name_resolves_and_every_module_imports():
    assert len(simprof.__all__) == len(set(simprof.__all__)), "a name twice in simprof.__all__"
    for name in simprof.__all__:
        obj = getattr(simprof, name)  # AttributeError names the missing one
        # Defined in one of the package's modules, re-exported by __init__.
        assert obj.__module__.startswith("simprof."), (name, obj.__module__)
        assert obj.__module__[len("simprof."):] in MODULES, (name, obj.__module__)
    here = os.path.dirname(simprof.__file__)
    found = {os.path.basename(p)[:-3] for p in glob.glob(os.path.join(here, "*.py"))} - {
        "__init__", "__main__"}  # __main__: python -m simprof (test_run_command.py)
    assert found == MODULES, "modules next to %s: %s" % (simprof.__file__, sorted(found))
    for name in sorted(MODULES):
        module = importlib.import_module("simprof." + name)
        assert getattr(simprof, name) is module
        for public in getattr(module, "__all__", []):
            assert public in simprof.__all__, "simprof.%s.%s is not re-exported" % (name, public)
            assert getattr(simprof, public) is getattr(module, public)


def test_every_public_name_has_type_hints_and_a_docstring():
    # py.typed ships with the package (PEP 561): then every public signature must be annotated.
    assert os.path.exists(os.path.join(os.path.dirname(simprof.__file__), "py.typed"))
    missing = []
    for name in simprof.__all__:
        obj = getattr(simprof, name)
        if inspect.isclass(obj):
            if issubclass(obj, Exception):
                assert obj.__doc__, name
                continue
            members = [(name + "." + n, m) for n, m in vars(obj).items()
                       if (not n.startswith("_") or n == "__init__")
                       and (inspect.isfunction(m) or isinstance(m, (property, staticmethod)))]
        else:
            members = [(name, obj)]
        assert obj.__doc__, "%s has no docstring (help() shows nothing)" % name
        for qualified, m in members:
            if isinstance(m, property):
                m = m.fget
            if isinstance(m, staticmethod):
                m = m.__func__
            f = inspect.unwrap(m)
            if not inspect.getdoc(f):
                missing.append(qualified + " (no docstring)")
            sig = inspect.signature(f)
            for p in sig.parameters.values():
                if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty:
                    missing.append("%s(%s)" % (qualified, p.name))
            if f.__name__ != "__init__" and sig.return_annotation is inspect.Signature.empty:
                missing.append(qualified + " -> ?")
    assert not missing, "without type hints or a docstring: " + ", ".join(missing)
