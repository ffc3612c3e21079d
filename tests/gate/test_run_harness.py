"""End to end: a patch that reaches the harness by a route classify did not use to watch
ends ``undecided`` with the route named; the same patch without the hostile part keeps its
verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from patchlane.main import main
from tests.gitrepo import GitRepo
from tests.sample import make_billing_repo

pytestmark = pytest.mark.slow  # the gate end to end, with a real local replay

# A hook that turns every failed report into a pass: what a hostile harness change does.
WASH = """\
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.outcome = "passed"
"""
FAILING_TEST = "def test_invoice_timestamp_order():\n    assert 1 + 1 == 3\n"
PASSING_TEST = "def test_invoice_timestamp_order():\n    assert 1 + 1 == 2\n"


def gate(repo: GitRepo, out: Path) -> int:
    argv = ["--repo", str(repo.path), "-q", "gate", "--base", "main", "--seed", "7"]
    return main([*argv, "--cases", "20", "--replay", "local", "--out-dir", str(out)])


def verdict(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "verdict.json").read_text(encoding="utf-8"))
    return data


def reasons(out: Path) -> str:
    return "\n".join(r["message"] for r in verdict(out)["reasons"])


@pytest.fixture
def starred(repo: GitRepo) -> GitRepo:
    """The sample project whose conftest star-imports a helper module."""
    make_billing_repo(repo)
    repo.write("tests/conftest.py", "from support import *\n")
    repo.write("tests/support.py", "SUPPORT = 1\n")
    repo.commit("a conftest with shared helpers")
    repo.branch("agent")
    return repo


def test_a_hook_in_a_star_imported_helper_is_undecided(starred: GitRepo, tmp_path: Path) -> None:
    starred.write("tests/support.py", WASH)
    starred.write("tests/test_billing.py", FAILING_TEST)
    starred.commit("helper washes failures")
    out = tmp_path / "ev"
    assert gate(starred, out) == 3
    assert verdict(out)["verdict"] == "undecided"
    assert "tests/support.py (test harness: imported by tests/conftest.py)" in reasons(out)


def test_the_same_patch_without_the_hook_is_rejected(starred: GitRepo, tmp_path: Path) -> None:
    starred.write("tests/test_billing.py", FAILING_TEST)
    starred.commit("a failing test")
    out = tmp_path / "ev"
    assert gate(starred, out) == 1
    assert verdict(out)["verdict"] == "reject"


def test_a_harmless_patch_there_is_accepted(starred: GitRepo, tmp_path: Path) -> None:
    starred.write("tests/test_billing.py", PASSING_TEST)
    starred.commit("tidy the test")
    out = tmp_path / "ev"
    assert gate(starred, out) == 0, reasons(out)


def test_a_plugin_named_by_a_test_module_is_not_accepted(repo: GitRepo, tmp_path: Path) -> None:
    make_billing_repo(repo)
    repo.branch("agent")
    repo.write("tests/washer.py", WASH)
    repo.write("tests/test_billing.py", 'pytest_plugins = ["washer"]\n\n' + FAILING_TEST)
    repo.commit("a plugin by name")
    out = tmp_path / "ev"
    # The plugin's hookwrapper, registered while collecting, is caught by the run child's
    # tripwire: the failing test fails (reject), and the harness change is still named.
    assert gate(repo, out) == 1
    assert "tests/washer.py (test harness: named by pytest_plugins in tests/test_billing.py)" in (
        reasons(out)
    )


@pytest.fixture
def refund_tested(repo: GitRepo) -> GitRepo:
    make_billing_repo(repo)
    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write(
        "tests/test_billing.py",
        "from billing import apply_refund\n\n"
        "def test_refund():\n    assert apply_refund(5, 2) == 3\n",
    )
    repo.commit("a real test")
    repo.branch("agent")
    # The real code breaks.
    repo.write("src/billing/__init__.py", "def apply_refund(c, r):\n    return c + r\n")
    return repo


def test_breaking_the_package_under_test_is_rejected(
    refund_tested: GitRepo, tmp_path: Path
) -> None:
    refund_tested.commit("break refunds")
    out = tmp_path / "ev"
    assert gate(refund_tested, out) == 1


def test_a_stub_that_shadows_the_package_under_test_is_undecided(
    refund_tested: GitRepo, tmp_path: Path
) -> None:
    # A tests/billing/ stub that pytest imports first would hide the break.
    repo = refund_tested
    repo.write("tests/billing/__init__.py", "def apply_refund(c, r):\n    return c - r\n")
    repo.commit("break refunds, shadow the package")
    out = tmp_path / "ev"
    assert gate(repo, out) == 3
    assert "new 'billing' on tests/ shadows the project's src/billing" in reasons(out)


@pytest.mark.parametrize(
    ("rel", "kind"),
    [
        (".gitattributes", "checkout attributes"),
        ("src/billing/__pycache__/__init__.cpython-311.pyc", "committed bytecode"),
    ],
)
def test_attributes_and_bytecode_keep_the_verdict_undecided(
    repo: GitRepo, tmp_path: Path, rel: str, kind: str
) -> None:
    make_billing_repo(repo)
    repo.branch("agent")
    repo.write("tests/test_billing.py", PASSING_TEST)
    repo.write(rel, "*.py text eol=crlf\n" if kind == "checkout attributes" else b"\x00\x01")
    repo.commit("tidy, plus a control file")
    out = tmp_path / "ev"
    assert gate(repo, out) == 3
    assert f"{rel} ({kind})" in reasons(out)


def test_a_plugin_named_by_a_computed_string_is_caught_at_run_time(
    repo: GitRepo, tmp_path: Path
) -> None:
    # No literal names the plugin, so the static rules cannot see it; pytest still loads it.
    make_billing_repo(repo)
    repo.branch("agent")
    repo.write("tests/washer.py", WASH)
    repo.write(
        "tests/test_billing.py",
        'globals()["pytest_" + "plugins"] = ["wash" + "er"]\n\n' + FAILING_TEST,
    )
    repo.commit("a plugin by a computed name")
    out = tmp_path / "ev"
    assert gate(repo, out) == 1  # the tripwire, as above
    assert "pytest loaded tests/washer.py as a plugin and the patch changes it" in reasons(out)
    replay = json.loads((out / "replay-report.json").read_text(encoding="utf-8"))
    assert "tests/washer.py" in replay["plugin_files"]


def test_a_harness_change_that_stops_pytest_is_undecided_not_bad_input(
    repo: GitRepo, tmp_path: Path
) -> None:
    make_billing_repo(repo)
    repo.branch("agent")
    repo.write("tests/conftest.py", "raise SystemExit('no tests today')\n")
    repo.write("tests/test_billing.py", PASSING_TEST)
    repo.commit("a conftest that stops pytest")
    out = tmp_path / "ev"
    assert gate(repo, out) == 3
    replay = json.loads((out / "replay-report.json").read_text(encoding="utf-8"))
    assert "pytest cannot collect the suite after the patch's harness change" in replay["reason"]


def test_classify_prints_the_route(starred: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    starred.write("tests/support.py", WASH)
    starred.commit("helper washes failures")
    assert main(["--repo", str(starred.path), "classify", "--base", "main"]) == 0
    printed = capsys.readouterr().out
    assert "control plane: tests/support.py (test harness: imported by tests/conftest.py)" in (
        printed
    )


INJECTING_BILLING = """\
import sys

import pytest


def apply_refund(c, r):
    return c + r


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.outcome = "passed"


# Put the hook into the namespace of whichever conftest is importing this module.
frame = sys._getframe(1)
while frame is not None:
    if frame.f_globals.get("__file__", "").endswith("conftest.py"):
        frame.f_globals["pytest_runtest_makereport"] = pytest_runtest_makereport
        break
    frame = frame.f_back
"""


def test_a_hook_the_code_under_test_slips_into_a_conftest_is_caught_at_run_time(
    repo: GitRepo, tmp_path: Path
) -> None:
    make_billing_repo(repo)
    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write("tests/conftest.py", "import billing\n")
    repo.write(
        "tests/test_billing.py",
        "from billing import apply_refund\n\n"
        "def test_refund():\n    assert apply_refund(5, 2) == 3\n",
    )
    repo.commit("a conftest that imports the package")
    repo.branch("agent")
    repo.write("src/billing/__init__.py", INJECTING_BILLING)
    repo.commit("break refunds, wash the failure from a conftest's namespace")
    out = tmp_path / "ev"
    assert gate(repo, out) == 3
    assert "pytest loaded src/billing/__init__.py as a plugin" in reasons(out)
