"""Day one, end to end: ``patchlane init`` on a repository without any property, then the
README's own gate command (``patchlane gate --replay local --patch agent.diff``) on a
green patch reaches ``accept_for_review``: the map holds the seed, the code is judged by
the base's tests alone, and the prose the patch touches is ignored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.gitrepo import GitRepo, run_patchlane

SHOP = '''\
def refund(charge, amount):
    """The part of ``amount`` that can be refunded from ``charge``."""
    return charge - min(amount, charge)
'''

GREEN = '''\
def refund(charge, amount):
    """The part of ``amount`` that can be refunded from ``charge``."""
    kept = min(amount, charge)
    return charge - kept
'''

TESTS = """\
from shop import refund


def test_partial():
    assert refund(10, 3) == 7


def test_capped():
    assert refund(3, 10) == 0
"""


@pytest.mark.slow
def test_init_then_the_readme_gate_command_accepts_a_green_patch(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.write("shop/__init__.py", SHOP)
    repo.write("tests/test_shop.py", TESTS)
    repo.write("README.md", "# shop\n")
    repo.write("CHANGELOG.md", "## 1.0\n")
    repo.write(".gitignore", "__pycache__/\n")
    repo.commit("a project without properties")
    done = run_patchlane("init", cwd=repo.path)
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr
    assert "the code (shop/) is judged by the base's tests alone" in out
    assert out.splitlines()[-1].endswith("run: patchlane gate --replay local")
    checked = run_patchlane("check", cwd=repo.path)
    assert checked.returncode == 0, checked.stdout
    repo.commit("patchlane init")

    # The agent's patch, as a diff file; the work tree stays on main.
    repo.branch("agent")
    repo.write("shop/__init__.py", GREEN)
    repo.write("CHANGELOG.md", "## 1.0\n- refund reads better\n")
    repo.commit("refactor refund")
    diff = tmp_path / "agent.diff"
    diff.write_text(repo.git("diff", "main", "agent"))
    classified = run_patchlane(
        "--json", "classify", "--base", "main", "--head", "agent", cwd=repo.path
    )
    repo.checkout("main")
    data = json.loads(classified.stdout) if classified.stdout else {}
    assert data.get("unmapped") == [], classified.stdout

    gate = run_patchlane("gate", "--replay", "local", "--patch", diff, cwd=repo.path)
    said = gate.stdout.decode()
    assert gate.returncode == 0, said + gate.stderr.decode()
    assert "verdict: accept_for_review" in said.splitlines(), said
    assert "map incomplete" not in said
    # The note says how the code was judged.
    note = (repo.path / ".patchlane" / "review.md").read_text("utf-8")
    assert "judged by the base's tests alone" in note, note
    verdict = json.loads((repo.path / ".patchlane" / "verdict.json").read_text("utf-8"))
    assert verdict["verdict"] == "accept_for_review"
    # The evidence folder is ignored by the .gitignore init appended to.
    assert ".patchlane" not in repo.git("status", "--porcelain")
