"""Files the project's pytest collects are test files, whatever the map says: the gate, end to
end, in real git repos (docs/architecture.md §2, ``project.collects``).

The sample project's map ignores ``docs/`` ("prose only"), while its pytest configuration
collects ``docs/*.md`` as doctests. A patch that adds a bug and edits the doctest's expected
output to match passes its own full suite; the base's version of the doctest, run against
the head, fails: edited expectations, never ``accept_for_review``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.gate.evidence import gate, load
from tests.gitrepo import GitRepo
from tests.sample import make_billing_repo

pytestmark = pytest.mark.slow  # the gate end to end, with a real local replay

PYPROJECT = """\
[tool.pytest.ini_options]
pythonpath = ["src"]
testpaths = ["tests", "docs"]
addopts = "--doctest-glob=*.md"
"""
GUIDE = """\
# Billing

A refund comes off the charge:

    >>> from billing import apply_refund
    >>> apply_refund(1000, 250)
    750
"""
REFUND = "def apply_refund(charge_cents, refund_cents):\n    return charge_cents - refund_cents\n"
# Off by one for exactly the doctest's case: nothing but the doctest catches it.
BUGGY = REFUND.replace("refund_cents\n", "refund_cents + (refund_cents == 250)\n")


@pytest.fixture
def project(repo: GitRepo) -> GitRepo:
    """The billing sample (its map ignores docs/) with docs/refunds.md collected as a doctest."""
    repo.write("pyproject.toml", PYPROJECT)
    repo.write("docs/refunds.md", GUIDE)
    make_billing_repo(repo)
    repo.branch("agent")
    return repo


def test_an_ignored_doctest_edited_to_match_a_bug_is_undecided(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/billing/__init__.py", BUGGY)
    project.write("docs/refunds.md", GUIDE.replace("    750\n", "    751\n"))
    project.commit("fast path")
    out = tmp_path / "ev"
    assert gate(project, out) == 3
    (edited,) = load(out, "replay-report.json")["edited_expectations"]
    assert edited["nodeid"] == "docs/refunds.md::refunds.md"
    assert "docs/refunds.md::refunds.md" in (out / "replay-slice.txt").read_text()
    reasons = load(out, "verdict.json")["reasons"]
    assert any("changes the expectations" in json.dumps(r) for r in reasons)
    files = {f["path"]: f for f in load(out, "classify.json")["files"]}
    assert files["docs/refunds.md"]["lanes"] == ["replay"]
    assert "ignored" not in files["docs/refunds.md"]


def test_an_ignored_doctest_the_patch_leaves_alone_catches_the_bug(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("src/billing/__init__.py", BUGGY)
    project.commit("fast path")
    out = tmp_path / "ev"
    assert gate(project, out) == 1
    assert load(out, "replay-report.json")["failed"] == ["docs/refunds.md::refunds.md"]


def test_a_prose_edit_beside_a_doctest_is_judged_and_accepted(
    project: GitRepo, tmp_path: Path
) -> None:
    # Once a test file, a prose-only edit of it is no longer "ignored paths only"
    # (undecided): its base version passes at the head, and the replay can accept it.
    project.write("docs/refunds.md", GUIDE.replace("comes off", "is taken off"))
    project.commit("wording")
    out = tmp_path / "ev"
    assert gate(project, out) == 0
    assert load(out, "replay-report.json")["edited_expectations"] == []


def test_a_text_doctest_under_the_test_roots_is_checked_by_its_base_version(
    repo: GitRepo, tmp_path: Path
) -> None:
    # pytest's default test*.txt, under tests/: its base version runs against the head too.
    repo.write("pyproject.toml", PYPROJECT.replace("--doctest-glob=*.md", ""))
    repo.write("tests/test_refund.txt", GUIDE)
    make_billing_repo(repo)
    repo.branch("agent")
    repo.write("src/billing/__init__.py", BUGGY)
    repo.write("tests/test_refund.txt", GUIDE.replace("    750\n", "    751\n"))
    repo.commit("fast path")
    out = tmp_path / "ev"
    assert gate(repo, out) == 3
    (edited,) = load(out, "replay-report.json")["edited_expectations"]
    assert edited["nodeid"] == "tests/test_refund.txt::test_refund.txt"
