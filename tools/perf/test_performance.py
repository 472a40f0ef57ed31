# SPDX-License-Identifier: MIT
"""tools/perf/performance.py: the tables say what the records say, and --check catches drift."""
import json
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import performance  # noqa: E402

PAGE = "# Perf\n\nprose before\n\n%s\n%s\n\nprose after\n" % (performance.BEGIN, performance.END)


def verdict(name, value, status, goal="<=", target=1.0, unit="%"):
    return {"name": name, "quantity": "q of " + name, "goal": goal, "target": target,
            "unit": unit, "value": value, "status": status}


def make_tree(tmp_path, runs, records):
    d = tmp_path / "docs" / "performance"
    d.mkdir(parents=True)
    (d / "runs.json").write_text(json.dumps(runs))
    for name, rec in records.items():
        (d / name).write_text(json.dumps(rec))
    (tmp_path / "docs" / "performance.md").write_text(PAGE, encoding="utf-8")
    return tmp_path


def run(name, file, commit):
    return {"file": file, "bench": name, "machine": "H200", "date": "2026-12-03", "commit": commit,
            "command": "bench/%s --verdicts FILE" % name}


def test_each_verdict_in_each_run_with_the_spread(tmp_path):
    root = make_tree(tmp_path,
                     [run("truth_bench", "a.json", "aaa"), run("truth_bench", "b.json", "bbb")],
                     {"a.json": {"verdicts": [verdict("pacing", 0.25, "met")]},
                      "b.json": {"verdicts": [verdict("pacing", 1.5, "MISSED")]}})
    assert performance.main(["--root", str(root)]) == 0
    page = (root / "docs" / "performance.md").read_text(encoding="utf-8")
    assert "| `pacing` | q of pacing | <= 1 % | +0.25 % met | +1.50 % MISSED |" in page
    assert "spread" not in page  # one run a commit: no spread to give
    assert "commit aaa" in page and "commit bbb" in page
    assert page.startswith("# Perf\n\nprose before") and page.endswith("prose after\n")
    assert performance.main(["--root", str(root), "--check"]) == 0


def test_check_fails_when_a_record_changes(tmp_path, capsys):
    root = make_tree(tmp_path, [run("truth_bench", "a.json", "aaa")],
                     {"a.json": {"verdicts": [verdict("pacing", 0.25, "met")]}})
    assert performance.main(["--root", str(root)]) == 0
    (root / "docs" / "performance" / "a.json").write_text(
        json.dumps({"verdicts": [verdict("pacing", 0.75, "met")]}))
    assert performance.main(["--root", str(root), "--check"]) == 1
    assert "+0.75 % met" in capsys.readouterr().out


def test_a_missing_or_wrong_record_is_named(tmp_path, capsys):
    root = make_tree(tmp_path, [run("truth_bench", "gone.json", "aaa")], {})
    assert performance.main(["--root", str(root)]) == 2
    assert "gone.json: cannot be read" in capsys.readouterr().err
    shutil.rmtree(root / "docs")
    root = make_tree(tmp_path, [run("truth_bench", "a.json", "aaa")], {"a.json": {"x": 1}})
    assert performance.main(["--root", str(root)]) == 2
    assert "a.json: no 'verdicts' list" in capsys.readouterr().err


def test_a_not_measured_verdict_says_so(tmp_path):
    root = make_tree(tmp_path, [run("truth_bench", "a.json", "aaa")],
                     {"a.json": {"verdicts": [verdict("pacing", None, "not measured")]}})
    assert performance.main(["--root", str(root)]) == 0
    assert "| <= 1 % | not measured |" in (root / "docs" / "performance.md").read_text(encoding="utf-8")


def test_the_spread_is_per_commit_and_every_verdict_is_listed(tmp_path):
    root = make_tree(tmp_path, [run("truth_bench", "a.json", "aaa"), run("truth_bench", "b.json", "aaa"),
                                run("truth_bench", "c.json", "ccc")],
                     {"a.json": {"verdicts": [verdict("pacing", 0.25, "met")]},
                      "b.json": {"verdicts": [verdict("pacing", 0.5, "met")]},
                      "c.json": {"verdicts": [verdict("pacing", 0.9, "met"),
                                              verdict("timer", 1.1, "met")]}})
    assert performance.main(["--root", str(root)]) == 0
    page = (root / "docs" / "performance.md").read_text(encoding="utf-8")
    assert "| run 1 | run 2 | run 3 | spread aaa |" in page
    assert "| +0.25 % met | +0.50 % met | +0.90 % met | 0.25 |" in page  # not 0.65: two commits
    assert "| `timer` | q of timer | <= 1 % | - | - | +1.10 % met | - |" in page
