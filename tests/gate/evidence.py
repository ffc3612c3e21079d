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
