# SPDX-License-Identifier: MIT
"""The package's layout: every public name resolves from `import simprof`, and every module of the
package imports as simprof.<module> (the build tree and cmake --install copy every *.py)."""
import glob
import importlib
import os

import simprof

# The modules of the package (python/simprof/*.py but __init__); a new one is added here.
MODULES = {"_lib", "errors", "core", "timers", "trace", "cuda"}


def test_every_public_name_resolves_and_every_module_imports():
    assert len(simprof.__all__) == len(set(simprof.__all__)), "a name twice in simprof.__all__"
    for name in simprof.__all__:
        obj = getattr(simprof, name)  # AttributeError names the missing one
        # Defined in one of the package's modules, re-exported by __init__.
        assert obj.__module__.startswith("simprof."), (name, obj.__module__)
        assert obj.__module__[len("simprof."):] in MODULES, (name, obj.__module__)
    here = os.path.dirname(simprof.__file__)
    found = {os.path.basename(p)[:-3] for p in glob.glob(os.path.join(here, "*.py"))} - {"__init__"}
    assert found == MODULES, "modules next to %s: %s" % (simprof.__file__, sorted(found))
    for name in sorted(MODULES):
        module = importlib.import_module("simprof." + name)
        assert getattr(simprof, name) is module
        for public in getattr(module, "__all__", []):
            assert public in simprof.__all__, "simprof.%s.%s is not re-exported" % (name, public)
            assert getattr(simprof, public) is getattr(module, public)
