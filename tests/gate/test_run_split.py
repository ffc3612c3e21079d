"""The tests that judge run without the patch's test code (docs/architecture.md §2, §4): the
gate, end to end, in real git repos with a real local replay.

Each project's full suite passes on ``main``; the patch on ``agent`` breaks the code and
brings test code that would hide it inside a shared pytest process, or deletes a test in a
project whose ``python_files`` are not pytest's defaults.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gate.evidence import gate, load, reasons
from tests.gitrepo import GitRepo
from tests.sample import CALC, make_billing_repo

pytestmark = pytest.mark.slow  # the gate end to end, with a real local replay


BROKEN_ADD = CALC.replace("return a + b", "return a - b")

TEST_CALC = """\
from billing.calc import add, mean


def test_add():
    assert add(1, 2) == 3


def test_mean():
    assert mean([1, 2]) == 1.5
"""

# Puts the base's ``add`` back when pytest imports it (into the function itself, so that a
# test that imported ``add`` by name gets it too): in one process with the base's test,
# that test would pass against the broken head.
RESTORE = """\
import billing.calc


def _add(a, b):
    return a + b


billing.calc.add.__code__ = _add.__code__


def test_restored():
    assert billing.calc.add(2, 2) == 4
"""

# Makes every test pass, whatever it does.
WRAP = """\
import _pytest.python

_real = _pytest.python.Function.runtest


def _runtest(self):
    try:
        _real(self)
    except BaseException:
        pass


_pytest.python.Function.runtest = _runtest


def test_wrapped():
    pass
"""


@pytest.fixture
def project(repo: GitRepo) -> GitRepo:
    make_billing_repo(repo)
    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write("src/billing/calc.py", CALC)
    repo.write("tests/test_calc.py", TEST_CALC)
    repo.commit("calc and its tests")
    repo.branch("agent")
    return repo


def test_a_new_test_module_that_restores_the_old_value_at_import_is_rejected(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/billing/calc.py", BROKEN_ADD)
    project.write("tests/test_zz_restore.py", RESTORE)
    project.commit("a faster add, and a test of it")
    out = tmp_path / "ev"
    assert gate(project, out) == 1, reasons(out)
    replay = load(out, "replay-report.json")
    # The base's test failed in the process without the patch's module; the patch's own
    # test ran in its own process, and both are in the one receipt of the one slice.
    assert replay["failed"] == ["tests/test_calc.py::test_add"]
    receipt = load(out, "receipt.json")
    assert "tests/test_zz_restore.py::test_restored" in receipt["passed_nodeids"]
    slice_ids = (out / "replay-slice.txt").read_text(encoding="utf-8").splitlines()
    assert "tests/test_zz_restore.py::test_restored" in slice_ids
    assert "tests/test_calc.py::test_add" in slice_ids


@pytest.mark.parametrize("breaks", [False, True])
def test_a_module_that_wraps_pytests_runtest_is_never_accepted(
    project: GitRepo, tmp_path: Path, breaks: bool
) -> None:
    project.write("src/billing/calc.py", BROKEN_ADD if breaks else CALC + "\n# tidy\n")
    project.write("tests/test_wrap.py", WRAP)
    project.commit("a wrapper")
    out = tmp_path / "ev"
    # The wrapper is a test-harness change its own replay cannot vouch for; its run rebinds
    # pytest's Function.runtest, so no outcome of that run is believed and its nodes fail
    # (the run child's tripwire): reject, broken or not.
    assert gate(project, out) == 1, reasons(out)
    replay = load(out, "replay-report.json")
    why = replay["failed_why"]["tests/test_wrap.py::test_wrapped"]
    assert "pytest's Function.runtest was replaced" in why
    details = load(out, "classify.json")["control_plane_details"]
    (wrap,) = [d for d in details if d["path"] == "tests/test_wrap.py"]
    assert wrap["kind"] == "test harness"
    assert "stores into _pytest.python.Function.runtest" in wrap["why"]


def test_a_test_deleted_from_a_module_named_by_the_projects_python_files_is_undecided(
    repo: GitRepo, tmp_path: Path
) -> None:
    make_billing_repo(repo)
    repo.write("pytest.ini", "[pytest]\npythonpath = src\npython_files = check_*.py\n")
    repo.write("src/billing/calc.py", CALC)
    repo.write("tests/check_calc.py", TEST_CALC)
    repo.commit("calc and its checks")
    repo.branch("agent")
    repo.write("src/billing/calc.py", CALC.replace("sum(xs) / len(xs)", "sum(xs) // len(xs)"))
    repo.write("tests/check_calc.py", TEST_CALC.split("def test_mean")[0])
    repo.commit("a simpler mean")
    out = tmp_path / "ev"
    assert gate(repo, out) == 3, reasons(out)
    assert load(out, "replay-report.json")["deleted_tests"] == ["tests/check_calc.py::test_mean"]
    assert any("deletes 1 test" in m and "test_mean" in m for m in reasons(out))
