# SPDX-License-Identifier: MIT
"""The layout check fails on each kind of breach and on a stale debt, and passes on a clean tree."""
import os
import subprocess
import sys

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'check.py')


def tree(tmp_path, files, debts=''):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (tmp_path / 'tools' / 'layout').mkdir(parents=True, exist_ok=True)
    (tmp_path / 'tools' / 'layout' / 'debt.txt').write_text(debts)
    r = subprocess.run([sys.executable, CHECK, str(tmp_path)], capture_output=True, text=True)
    return r.returncode, r.stdout


def lines(n):
    return ''.join(f'int x{i};\n' for i in range(n))


def test_a_clean_tree_passes(tmp_path):
    rc, out = tree(tmp_path, {'src/base/a.cpp': lines(400), 'tests/core/t.cpp': lines(600)})
    assert rc == 0, out


def test_a_file_over_its_limit_fails(tmp_path):
    rc, out = tree(tmp_path, {'src/base/a.cpp': lines(401)})
    assert rc == 1 and 'src/base/a.cpp: 401 lines, over the file limit of 400' in out, out
    rc, out = tree(tmp_path, {'tests/core/t.cpp': lines(601)})
    assert rc == 1 and 'over the file limit of 600' in out, out


def test_a_long_function_in_src_fails(tmp_path):
    body = 'int f(int a) {\n' + '  a += 1;\n' * 80 + '  return a;\n}\n'
    rc, out = tree(tmp_path, {'src/base/f.cpp': body})
    assert rc == 1 and 'src/base/f.cpp:f: 83 lines, over the function limit of 80' in out, out


def test_a_private_include_across_rooms_fails(tmp_path):
    files = {'src/cuda/timing/a.cpp': '#include "../graphs/private.hpp"\n',
             'src/cuda/graphs/private.hpp': '#pragma once\n'}
    rc, out = tree(tmp_path, files)
    assert rc == 1 and 'which src/cuda/timing does not depend on' in out, out
    files = {'src/cuda/timing/a.cpp': '#include "../cupti/cupti_hub.hpp"\n'}
    rc, out = tree(tmp_path / 'declared', files)
    assert rc == 0, out


def test_the_core_including_a_cuda_header_fails(tmp_path):
    rc, out = tree(tmp_path, {'src/profiler/p.cpp': '#include <cuda_runtime_api.h>\n'})
    assert rc == 1 and 'the core includes a device header' in out, out


def test_a_core_room_including_one_above_it_fails(tmp_path):
    rc, out = tree(tmp_path, {'src/profiler/r.cpp': '#include "simprof/trace/chrome_json.hpp"\n',
                              'src/trace/t.cpp': '#include "simprof/profiler/listener.hpp"\n'})
    assert rc == 1, out
    assert ('src/profiler/r.cpp: the core room profiler includes simprof/trace/, which it does not '
            'use') in out, out
    assert 'src/trace/t.cpp' not in out, 'trace uses profiler: ' + out


def test_debts_ratchet(tmp_path):
    files = {'src/base/a.cpp': lines(450)}
    assert tree(tmp_path, files, 'src/base/a.cpp 450\n')[0] == 0
    rc, out = tree(tmp_path, files, 'src/base/a.cpp 440\n')
    assert rc == 1 and 'grew past its debt of 440' in out, out
    rc, out = tree(tmp_path, files, 'src/base/a.cpp 460\n')
    assert rc == 1 and 'lower its line in debt.txt from 460 to 450' in out, out
    rc, out = tree(tmp_path, {'src/base/a.cpp': lines(10)}, 'src/base/a.cpp 460\n')
    assert rc == 1 and 'within its limit now' in out, out
    rc, out = tree(tmp_path / 'gone', {}, 'src/base/gone.cpp 460\n')
    assert rc == 1 and 'not found' in out, out
