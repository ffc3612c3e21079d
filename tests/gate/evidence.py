"""What the gate tests share: a gate with ``--replay local`` on the ``main`` base, and the
evidence it wrote, read back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from patchlane.main import main
from tests.gitrepo import GitRepo


def gate(repo: GitRepo, out: Path, *extra: str, cases: int = 20) -> int:
    """Gate ``repo``'s checked-out branch against ``main`` (seed 7, ``--replay local``,
    evidence in ``out``); return the exit code."""
    argv = ["--repo", str(repo.path), "-q", "gate", "--base", "main", "--seed", "7", *extra]
    return main([*argv, "--cases", str(cases), "--replay", "local", "--out-dir", str(out)])


def load(out: Path, name: str) -> Any:
    """The evidence file ``name`` in ``out``, parsed."""
    return json.loads((out / name).read_text(encoding="utf-8"))


def reasons(out: Path) -> list[str]:
    """The messages of ``verdict.json``'s reasons, in order."""
    return [r["message"] for r in load(out, "verdict.json")["reasons"]]


def verdict(out: Path) -> str:
    """``verdict.json``'s verdict."""
    return str(load(out, "verdict.json")["verdict"])


def calc_project(repo: GitRepo, calc: str, test_calc: str) -> GitRepo:
    """The sample billing project with ``src/billing/calc.py`` (``calc``) and its test
    ``tests/test_calc.py`` (``test_calc``) committed on ``main``; returns ``repo``."""
    from tests.sample import make_billing_repo

    make_billing_repo(repo)
    repo.write("pytest.ini", "[pytest]\npythonpath = src\n")
    repo.write("src/billing/calc.py", calc)
    repo.write("tests/test_calc.py", test_calc)
    repo.commit("calc and its test")
    return repo
