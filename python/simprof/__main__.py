# SPDX-License-Identifier: MIT
"""``python -m simprof run [options] -- COMMAND``, ``python -m simprof compare BASE.json NEW.json``
and the ``simprof`` command pip installs: the simprof command (src/run, built with the package),
run with these arguments. See docs/run.md and docs/comparing.md."""
import os
import sys
from typing import List, Optional


def command_path() -> Optional[str]:
    """The simprof command bundled with this package (beside its library), or None where the
    package was built without it (no NVTX headers or nlohmann_json at build time)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "simprof")
    return path if os.access(path, os.X_OK) else None


def main(argv: Optional[List[str]] = None) -> int:
    """Replaces this process with the simprof command (its exit status is the program's)."""
    args = sys.argv[1:] if argv is None else list(argv)
    path = command_path()
    if path is None:
        sys.stderr.write("simprof: this package was built without the simprof command (NVTX's "
                         "headers or nlohmann_json were missing when it was built)\n")
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [path] + args)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
