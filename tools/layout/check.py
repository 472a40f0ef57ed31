#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The tree's layout rules, checked (ctest label `layout`; docs/architecture.md#the-rooms).

  tools/layout/check.py [ROOT]      exit status 0 when every rule holds, 1 with one line a breach

Rules:
  * sizes: a source file in include/, src/, python/, examples/ or tools/ is at
    most 400 lines; a test (tests/, python/tests/) at most 600;
  * functions: a function in src/ is at most 80 lines;
  * rooms: a private header (a quoted include that is not "simprof/...") comes from the including
    file's own room (its folder) or from a room it depends on (ROOM_DEPS: one way, no cycles);
    a public header includes only public headers;
  * core: the core (every room but cuda/ and the C API's CUDA half) includes no CUDA, CUPTI, NVTX
    or NCCL header, and its rooms include each other's public headers one way only (CORE_USES);
Known debts are listed in tools/layout/debt.txt with their size today: such a file or function may
not grow, and when it shrinks or is paid off its line must be lowered or removed (a ratchet)."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import functions  # noqa: E402

SOURCES = ('.cpp', '.hpp', '.h', '.cu', '.cuh', '.py', '.cc')
FILE_LIMITS = {'include': 400, 'src': 400, 'python': 400, 'examples': 400, 'tools': 400,
               'tests': 600}
FUNCTION_LIMIT = 80
# The private headers a room may include from other rooms: runtime is the CUDA rooms' base, cupti
# holds CUPTI's process state that the tracer, the timers and the allocation counter share.
ROOM_DEPS = {
    'src/cuda/cupti': {'src/cuda/runtime'},
    'src/cuda/trace': {'src/cuda/runtime', 'src/cuda/cupti'},
    'src/cuda/timing': {'src/cuda/runtime', 'src/cuda/cupti'},
    'src/cuda/memory': {'src/cuda/runtime', 'src/cuda/cupti'},
    'src/run': {'src/record', 'src/compare'},  # the run record every tool shares; compare
    'src/profiler': {'src/profiler/zones'},  # EngineZones' insides: state.hpp, its one face
}
CORE = ('include/simprof/base', 'include/simprof/detail', 'include/simprof/memory',
        'include/simprof/precision', 'include/simprof/profiler', 'include/simprof/timers',
        'include/simprof/trace', 'src/base', 'src/memory', 'src/precision', 'src/profiler',
        'src/timers', 'src/trace')
# Which core rooms each core room's files (include/simprof/ROOM, src/ROOM) may include: one way, no
# cycles (docs/architecture.md#which-way-the-dependencies-go).
CORE_USES = {
    'detail': set(),
    'base': {'detail'},
    'profiler': {'base', 'detail'},
    'timers': {'base', 'detail'},
    'precision': {'base', 'detail'},
    'trace': {'profiler', 'base', 'detail'},
    'memory': {'trace', 'profiler', 'base', 'detail'},
}
PUBLIC_ROOM = re.compile(r'^\s*#\s*include\s*"simprof/([a-z_]+)/', re.M)
DEVICE_HEADER = re.compile(r'#\s*include\s*<(cuda|cupti|nvtx|nccl|cub/|thrust/)')
QUOTED = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def sources(root, top):
    for d, dirs, files in os.walk(os.path.join(root, top)):
        dirs[:] = sorted(x for x in dirs if x not in ('__pycache__', 'build'))
        for f in sorted(files):
            if f.endswith(SOURCES):
                yield os.path.relpath(os.path.join(d, f), root)


def read_debts(path):
    debts = {}
    for n, line in enumerate(open(path, encoding='utf-8'), 1):
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        key, _, size = line.rpartition(' ')
        if not key or not size.isdigit():
            raise SystemExit(f'{path}:{n}: expected "PATH LINES" or "PATH:FUNCTION LINES", got {line!r}')
        debts[key.strip()] = int(size)
    return debts


def measure(root):
    """Every file's and src/ function's size and limit, {key: (size, limit)}."""
    sizes = {}
    for top, limit in FILE_LIMITS.items():
        for rel in sources(root, top):
            with open(os.path.join(root, rel), encoding='utf-8', errors='replace') as f:
                n = sum(1 for _ in f)
            sizes[rel] = (n, FILE_LIMITS['tests'] if '/tests/' in rel else limit)
    for rel in sources(root, 'src'):
        if rel.endswith('.py'):
            continue
        for name, _, _, n in functions.functions(os.path.join(root, rel)):
            key = f'{rel}:{name}'
            sizes[key] = (max(n, sizes.get(key, (0, 0))[0]), FUNCTION_LIMIT)
    return sizes


def size_breaches(root, debts):
    out = []
    sizes = measure(root)
    for key, (n, limit) in sorted(sizes.items()):
        debt = debts.get(key)
        what = 'function' if ':' in key else 'file'
        if debt is None:
            if n > limit:
                out.append(f'{key}: {n} lines, over the {what} limit of {limit}')
        elif n <= limit:
            out.append(f'{key}: {n} lines, within its limit now: remove its line from debt.txt')
        elif n > debt:
            out.append(f'{key}: {n} lines, grew past its debt of {debt} (limit {limit})')
        elif n < debt:
            out.append(f'{key}: {n} lines, shrank: lower its line in debt.txt from {debt} to {n}')
    for key in sorted(set(debts) - set(sizes)):
        out.append(f'{key}: listed in debt.txt but not found: remove its line')
    return out


def room_breaches(root):
    out = []
    for top in ('src', 'include'):
        for rel in sources(root, top):
            room = os.path.dirname(rel)
            text = open(os.path.join(root, rel), encoding='utf-8', errors='replace').read()
            device = DEVICE_HEADER.search(text) if rel.startswith(CORE) else None
            if device:
                out.append(f'{rel}: the core includes a device header ({device.group(0)}...)')
            for inc in QUOTED.findall(text):
                if inc.startswith('simprof/'):
                    continue
                if top == 'include':
                    out.append(f'{rel}: a public header includes a private one ("{inc}")')
                    continue
                target = os.path.normpath(os.path.join(room, os.path.dirname(inc)))
                if target != room and target not in ROOM_DEPS.get(room, set()):
                    out.append(f'{rel}: includes "{inc}" from room {target}, which {room} does not '
                               'depend on (tools/layout/check.py ROOM_DEPS)')
    return out


def core_breaches(root):
    out = []
    for room, uses in sorted(CORE_USES.items()):
        for top in (os.path.join('include', 'simprof', room), os.path.join('src', room)):
            for rel in sources(root, top):
                text = open(os.path.join(root, rel), encoding='utf-8', errors='replace').read()
                for other in sorted(set(PUBLIC_ROOM.findall(text)) - uses - {room}):
                    out.append(f'{rel}: the core room {room} includes simprof/{other}/, which it '
                               'does not use (tools/layout/check.py CORE_USES)')
    return out


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
    debts = read_debts(os.path.join(root, 'tools', 'layout', 'debt.txt'))
    breaches = size_breaches(root, debts) + room_breaches(root) + core_breaches(root)
    for b in breaches:
        print(b)
    print(f'layout: {len(breaches)} breach{"es" if len(breaches) != 1 else ""}, '
          f'{len(debts)} known debts (tools/layout/debt.txt)')
    return 1 if breaches else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
