"""The replay runs the tests as the project does (issue 19, class 3): the gate, end to end.

Each test commits a project on ``main``, then a patch on ``agent``, runs the project's own
``python -m pytest`` at the head (as its CI would, in a checkout with a hash seed of its own)
and ``patchlane gate --replay local``, and checks that the gate says what that run says: a
head its own suite fails is never ``accept_for_review``. What the gate used to do differently
was run in a tree without ``.git``, under ``PYTHONHASHSEED`` = the public seed, and with a
``-W`` filter that outranked the project's ``filterwarnings``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from patchlane.main import main
from tests.gate.evidence import gate, load, verdict
from tests.gitrepo import GitRepo, add_symlink
from tests.infra.test_bytecode import plant_cached
from tests.sample import CALC, make_billing_repo

pytestmark = pytest.mark.slow  # the gate end to end, with a real local replay


TEST_CALC = """\
from billing.calc import add, mean


def test_add():
    assert add(1, 2) == 3


def test_mean():
    assert mean([1, 3]) == 2
"""


@pytest.fixture
def project(repo: GitRepo) -> GitRepo:
    make_billing_repo(repo)
    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write("src/billing/calc.py", CALC)
    repo.write("tests/test_calc.py", TEST_CALC)
    repo.commit("calc and its test")
    return repo


def patch(repo: GitRepo, files: dict[str, str]) -> str:
    """Commit ``files`` on the branch ``agent``; return the head."""
    repo.branch("agent")
    for path, text in files.items():
        repo.write(path, text)
    return repo.commit("the agent's patch")


def own_pytest(repo: GitRepo) -> int:
    """The project's own run at the head: plain pytest in the checkout, a random hash seed."""
    # As a user's shell has it: not this suite's xdist worker variables, which switch plugins.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONHASHSEED", "PATCHLANE_SEED")
        and not k.startswith(("PYTEST_XDIST_", "PYTEST_CURRENT_TEST"))
    }
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"],
        cwd=repo.path,
        env=env,
        capture_output=True,
        check=False,
    )
    return proc.returncode


# --- a real checkout: .git present ----------------------------------------------------------

NEEDS_CHECKOUT = """\
from pathlib import Path

import pytest

from billing.calc import add, mean

needs_checkout = pytest.mark.skipif(not Path(".git").exists(), reason="needs a git checkout")


@needs_checkout
def test_add():
    assert add(1, 2) == 3


def test_mean():
    assert mean([1, 3]) == 2
"""


def test_a_test_that_runs_only_in_a_checkout_runs_and_its_failure_rejects(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("tests/test_calc.py", NEEDS_CHECKOUT)
    project.commit("test_add needs a checkout")
    patch(project, {"src/billing/calc.py": CALC.replace("a + b", "a - b")})
    assert own_pytest(project) == 1
    out = tmp_path / "ev"
    assert gate(project, out) == 1  # without .git: skipped, test_mean passed, accepted
    assert verdict(out) == "reject"
    assert "tests/test_calc.py::test_add" in load(out, "receipt.json")["failed_nodeids"]


REVISION = """\
import subprocess


def revision():
    out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    return out.stdout.strip()
"""

TEST_REVISION = """\
import subprocess

from billing.revision import revision


def git(*args):
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def test_revision_is_the_checkouts_head():
    assert revision() == git("log", "-1", "--format=%H").strip()
    assert git("status", "--porcelain", "--untracked-files=no") == ""
"""


@pytest.mark.parametrize(
    ("short", "code", "word"), [(False, 0, "accept_for_review"), (True, 1, "reject")]
)
def test_a_test_that_asks_git_in_its_checkout_judges_the_head(
    project: GitRepo, tmp_path: Path, short: bool, code: int, word: str
) -> None:
    project.write("src/billing/revision.py", REVISION)
    project.write("tests/test_revision.py", TEST_REVISION)
    project.commit("the revision, from git")
    changed = REVISION.replace("return out.stdout.strip()", "return out.stdout.strip()[:12]")
    head = patch(project, {"src/billing/revision.py": changed if short else REVISION + "\n"})
    assert own_pytest(project) == code
    out = tmp_path / "ev"
    assert gate(project, out) == code  # without .git: it failed at the base too, undecided
    assert verdict(out) == word
    receipt = load(out, "receipt.json")
    assert receipt["head"] == head
    ran = receipt["failed_nodeids"] if short else receipt["passed_nodeids"]
    assert "tests/test_revision.py::test_revision_is_the_checkouts_head" in ran


def test_committed_bytecode_in_the_heads_checkout_is_not_run(
    project: GitRepo, tmp_path: Path
) -> None:
    # The checkout holds what materialise never wrote: bytecode that would make it pass.
    plant_cached(project.path, "src/billing/calc.py", CALC)
    patch(project, {"src/billing/calc.py": CALC.replace("a + b", "a - b")})
    assert (project.path / "src/billing/__pycache__").is_dir()
    out = tmp_path / "ev"
    assert gate(project, out) == 1
    assert verdict(out) == "reject"


def test_a_head_with_an_entry_materialise_refuses_still_gets_a_verdict(
    project: GitRepo, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.txt").write_text("outside\n")
    project.branch("agent")
    project.write("src/billing/calc.py", CALC + "\n")
    add_symlink(project, "tests/outside", str(outside))
    project.commit("a link out of the tree")
    out = tmp_path / "ev"
    assert gate(project, out) in (0, 1, 3)  # a judgement, never a crash or bad input
    assert (out / "verdict.json").is_file()


def test_a_head_git_cannot_check_out_is_undecided(project: GitRepo, tmp_path: Path) -> None:
    # A tree entry under ".git" (made with plumbing; git refuses to write it out): the
    # project's own checkout fails, so its suite never runs, and neither does the replay.
    project.branch("agent")
    project.write("src/billing/calc.py", CALC + "\n")
    good = project.commit("a change")
    blob = project.git("hash-object", "-w", "--stdin", stdin=b"evil\n").strip()
    inner = project.git("mktree", stdin=f"100644 blob {blob}\thooks-x\n".encode()).strip()
    listing = project.git("ls-tree", good) + f"040000 tree {inner}\t.git\n"
    tree = project.git("mktree", stdin=listing.encode()).strip()
    bad = project.git("commit-tree", tree, "-p", good, "-m", "a path git refuses").strip()
    project.git("branch", "refused", bad)
    out = tmp_path / "ev"
    argv = ["--repo", str(project.path), "-q", "gate", "--base", "main", "--head", "refused"]
    argv += ["--seed", "7", "--cases", "20", "--replay", "local", "--out-dir", str(out)]
    assert main(argv) == 3
    replay = load(out, "replay-report.json")
    assert replay["outcome"] == "not_run"
    assert "git cannot check out the head" in replay["reason"]


# --- the hash seed: drawn, never the public one -----------------------------------------------

TUNED = """\
import os


def apply_refund(charge_cents, refund_cents):
    if os.environ.get("PYTHONHASHSEED") == "7":  # the gate's public --seed
        return charge_cents - refund_cents
    return charge_cents + refund_cents
"""

TEST_REFUND = """\
from billing import apply_refund


def test_refund():
    assert apply_refund(1200, 200) == 1000
"""


def test_a_patch_tuned_to_the_public_seed_is_rejected_and_the_drawn_seed_is_recorded(
    project: GitRepo, tmp_path: Path
) -> None:
    project.write("tests/test_refund.py", TEST_REFUND)
    project.commit("a refund test")
    patch(project, {"src/billing/__init__.py": TUNED})
    assert own_pytest(project) == 1
    out = tmp_path / "ev"
    assert gate(project, out) == 1
    assert verdict(out) == "reject"
    drawn = load(out, "receipt.json")["hash_seed"]
    assert load(out, "receipt.json")["seed"] == 7 and drawn != 7
    assert load(out, "replay-report.json")["hash_seed"] == drawn
    note = (out / "review.md").read_text(encoding="utf-8")
    assert re.search(rf"receipt sha256 [0-9a-f]{{64}}, hash seed {drawn} \(fail", note)


SENSES_THE_SEED = """\
import os

from billing.calc import add


def test_add_zero():
    # Passes only where a hash seed is pinned in the environment (as the gate pins one).
    assert add(0, 0) == 0 and os.environ.get("PYTHONHASHSEED")
"""


def test_a_test_that_passes_only_where_the_hash_seed_is_pinned_is_not_accepted(
    project: GitRepo, tmp_path: Path
) -> None:
    # The run hashes under its drawn seed, yet its tests see a plain pytest environment:
    # a new test red under the project's own pytest is red in the replay too.
    patch(project, {"tests/test_a_new.py": SENSES_THE_SEED})
    assert own_pytest(project) == 1
    out = tmp_path / "ev"
    assert gate(project, out) == 1
    assert load(out, "replay-report.json")["failed"] == ["tests/test_a_new.py::test_add_zero"]


# --- the project's own warning filters ------------------------------------------------------

WARNS = """\
import warnings

import pytest


def add(a, b):
    warnings.warn("add is deprecated", {category})
    return a + b


def mean(xs):
    return sum(xs) / len(xs)
"""


@pytest.mark.parametrize("category", ["pytest.PytestAssertRewriteWarning", "DeprecationWarning"])
def test_a_warning_the_projects_filterwarnings_makes_an_error_rejects(
    project: GitRepo, tmp_path: Path, category: str
) -> None:
    project.write("pytest.ini", "[pytest]\npythonpath = src\nfilterwarnings = error\n")
    project.commit("warnings are errors")
    patch(project, {"src/billing/calc.py": WARNS.format(category=category)})
    assert own_pytest(project) == 1
    out = tmp_path / "ev"
    assert gate(project, out) == 1  # -W ignore::pytest.PytestAssertRewriteWarning let one by
    assert verdict(out) == "reject"
    assert "tests/test_calc.py::test_add" in load(out, "receipt.json")["failed_nodeids"]
