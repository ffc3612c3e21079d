"""The gate with the base's dependency map (``--dep-map auto``), end to end in real git repos.

The map narrows the slice; the verdicts must stay those of the project's full suite at the
head: a regression is ``reject`` whichever rule finds its test, a deleted failing test is
``undecided``, a harmless patch is ``accept_for_review``. The map is recorded on first use,
reused after, and not used when its bytes changed (the report says so).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from patchlane.main import main
from tests.gitrepo import GitRepo
from tests.sample import make_billing_repo

pytestmark = pytest.mark.slow  # the gate end to end, with a map recording and a local replay

CALC = """\
RATE = 2


def add(a, b):
    return a + b


def clamp(x, lo, hi):
    return max(lo, min(x, hi))


def scale(x):
    return x * RATE
"""
TEST_CALC = """\
import unittest

from billing.calc import add, clamp


class AddCases(unittest.TestCase):
    def test_add(self):
        for a, b, want in [(1, 2, 3), (0, 0, 0), (-1, 1, 0)]:
            with self.subTest(a=a, b=b):
                self.assertEqual(add(a, b), want)


def test_clamp():
    assert clamp(5, 0, 3) == 3
"""
TEST_SCALE = """\
import pytest

from billing.calc import scale


@pytest.fixture(scope="module")
def doubled():
    return scale(1)


def test_doubled(doubled):
    assert doubled == 2


def test_scale_again(doubled):
    assert scale(doubled) == 4
"""


@pytest.fixture
def project(repo: GitRepo) -> GitRepo:
    make_billing_repo(repo)
    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write("src/billing/calc.py", CALC)
    repo.write("tests/test_calc.py", TEST_CALC)
    repo.write("tests/test_scale.py", TEST_SCALE)
    repo.commit("calc and its tests")
    repo.branch("agent")
    return repo


def gate(repo: GitRepo, out: Path, cache: Path) -> int:
    argv = ["--repo", str(repo.path), "-q", "gate", "--base", "main", "--seed", "7"]
    argv += ["--cases", "20", "--replay", "local", "--out-dir", str(out)]
    return main([*argv, "--dep-map", "auto", "--dep-cache", str(cache)])


def load(out: Path, name: str) -> Any:
    return json.loads((out / name).read_text(encoding="utf-8"))


def test_a_regression_in_a_subtest_is_rejected_from_a_slice_the_map_narrowed(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write(
        "src/billing/calc.py", CALC.replace("return a + b", "return a + b if a >= 0 else b")
    )
    project.commit("optimise add")
    out = tmp_path / "ev"
    assert gate(project, out, tmp_path / "cache") == 1
    replay = load(out, "replay-report.json")
    assert replay["failed"] == ["tests/test_calc.py::AddCases::test_add"]
    assert replay["dependency_map"].endswith("recorded now")
    assert replay["slice_rules"]["ran changed code"] >= 1
    # Only the tests that ran add: not clamp's, not scale's.
    assert replay["slice_count"] < replay["suite_size"]
    assert "dependency map" in (out / "review.md").read_text(encoding="utf-8")
    timings = load(out, "verdict.json")["timings"]
    assert {"classify", "replay: dependency map", "replay: selection", "replay: run"} <= set(
        timings
    )
    assert timings["replay: dependency map"] <= timings["total"]


def test_a_module_level_change_reaches_a_fixtures_users_and_is_rejected(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/billing/calc.py", CALC.replace("RATE = 2", "RATE = 3"))
    project.commit("a new rate")
    out = tmp_path / "ev"
    assert gate(project, out, tmp_path / "cache") == 1
    failed = load(out, "replay-report.json")["failed"]
    assert failed == ["tests/test_scale.py::test_doubled", "tests/test_scale.py::test_scale_again"]


def test_a_harmless_change_is_accepted_and_the_map_is_reused(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/billing/calc.py", CALC.replace("return x * RATE", "return RATE * x"))
    project.commit("commute")
    cache = tmp_path / "cache"
    assert gate(project, tmp_path / "first", cache) == 0
    assert gate(project, tmp_path / "second", cache) == 0
    second = load(tmp_path / "second", "replay-report.json")
    assert not second["dependency_map"].endswith("recorded now")
    assert second["slice_count"] == 2  # the two tests that ran scale, its fixture's included


def test_deleting_the_failing_test_is_undecided_with_the_map(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/billing/calc.py", CALC.replace("min(x, hi)", "x"))
    project.write("tests/test_calc.py", TEST_CALC.split("def test_clamp")[0])
    project.commit("clamp is simpler now")
    out = tmp_path / "ev"
    assert gate(project, out, tmp_path / "cache") == 3
    assert load(out, "replay-report.json")["deleted_tests"] == ["tests/test_calc.py::test_clamp"]


def test_a_map_whose_bytes_changed_is_not_used_and_the_report_says_so(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/billing/calc.py", CALC.replace("return x * RATE", "return RATE * x"))
    project.commit("commute")
    cache = tmp_path / "cache"
    assert gate(project, tmp_path / "first", cache) == 0
    (recorded,) = cache.glob("maps/*/*.json")
    recorded.write_bytes(recorded.read_bytes().replace(b'"blind":[]', b'"blind":[0]'))
    assert gate(project, tmp_path / "second", cache) == 0
    note = load(tmp_path / "second", "replay-report.json")["dependency_map"]
    assert "recorded now" in note and "not to its name" in note
