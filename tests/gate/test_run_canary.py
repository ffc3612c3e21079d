"""The canary end to end: ``gate --replay local`` in real git repositories.

The project's map draws every test outside the slice (``canary: {share: 1, min: 0}``), so
which tests the canary holds is known; that the draw is random is tested where it is made
(``tests/lanes/replay/test_canary.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gate.evidence import gate, load, reasons, verdict
from tests.gitrepo import CLASSIFY_MAP, GitRepo
from tests.sample import CALC, make_billing_repo

pytestmark = pytest.mark.slow  # the gate end to end, with a real local replay

EVERY_TEST_OUTSIDE = CLASSIFY_MAP.replace(
    "ignore:", '  replay:\n    tests: ["tests/"]\n    canary: {share: 1, min: 0}\nignore:'
)
TEST_CALC = "from billing.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
# Reads the pages under the ignored docs/ folder, whose name it spells so that no static
# rule reads it (as a hostile patch's target would): the selection never holds this test.
TEST_DOCS = """\
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = bytes([100, 111, 99, 115]).decode()


def test_the_guide_has_its_title():
    for page in sorted((ROOT / FOLDER).iterdir()):
        assert page.read_text().startswith("# ")
"""
TEST_QUOTA = "from quota import LIMIT\n\n\ndef test_limit():\n    assert LIMIT == 10\n"
DOCS_NODE = "tests/test_docs.py::test_the_guide_has_its_title"
OUTSIDE = {
    DOCS_NODE,
    "tests/test_quota.py::test_limit",
    "tests/test_billing.py::test_invoice_timestamp_order",
}


@pytest.fixture
def project(repo: GitRepo) -> GitRepo:
    make_billing_repo(repo, review_map=EVERY_TEST_OUTSIDE)
    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write("src/billing/calc.py", CALC)
    repo.write("tests/test_calc.py", TEST_CALC)
    repo.write("tests/test_docs.py", TEST_DOCS)
    repo.write("tests/test_quota.py", TEST_QUOTA)
    repo.commit("calc, docs and quota, each with its test")
    repo.branch("agent")
    repo.write("src/billing/calc.py", CALC.replace("a + b", "b + a"))
    return repo


def canary_of(out: Path) -> list[str]:
    """The canary's node ids as the replay report names them."""
    return list(load(out, "replay-report.json")["canary"]["nodeids"])


def test_a_canary_test_that_fails_rejects_though_the_slice_is_green(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("docs/billing.md", "Invoices\n")  # no longer a title
    project.commit("add commutes; the guide renamed")
    out = tmp_path / "ev"
    assert gate(project, out) == 1, reasons(out)
    replay = load(out, "replay-report.json")
    assert replay["failed"] == [DOCS_NODE]
    assert "tests/test_calc.py::test_add" in replay["passed"]  # the slice itself is green
    assert DOCS_NODE in canary_of(out)  # it ran only because the canary drew it
    assert replay["slice_rules"]["canary"] == 3
    assert verdict(out) == "reject"


def test_the_canary_is_named_in_the_receipt_the_reports_and_the_note(
    project: GitRepo, tmp_path: Path
) -> None:
    project.commit("add commutes")
    out = tmp_path / "ev"
    assert gate(project, out) == 0, reasons(out)
    drawn = canary_of(out)
    assert set(drawn) == OUTSIDE  # the map's share 1: every test outside the slice
    replay = load(out, "replay-report.json")
    assert replay["canary"]["count"] == 3 and replay["canary"]["outside"] == 3
    assert replay["slice_rules"]["canary"] == 3
    assert set(drawn) <= set(replay["passed"])
    receipt = load(out, "receipt.json")
    assert receipt["canary_nodeids"] == sorted(drawn)
    slice_ids = (out / "replay-slice.txt").read_text(encoding="utf-8").splitlines()
    assert set(drawn) <= set(slice_ids)  # hashed with the slice: the receipt answers for them
    # Every test of the slice carries the rule that put it there (issue 31).
    why = replay["slice_reasons"]
    assert sorted(why) == slice_ids
    assert all(why[n].startswith("canary: drawn at random") for n in drawn)
    assert all(why[n].split(":")[0] in replay["slice_rules"] for n in slice_ids)
    assert load(out, "verdict.json")["canary"]["nodeids"] == drawn
    note = (out / "review.md").read_text(encoding="utf-8")
    assert "canary: 3 of 3 tests outside the slice, drawn at random" in note
