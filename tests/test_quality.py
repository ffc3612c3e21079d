"""Lint, format and strict typing are part of the test suite, so CI enforces them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    "argv",
    [
        ("ruff", "check", "src", "tests", "bench"),
        ("ruff", "format", "--check", "src", "tests", "bench"),
    ],
    ids=["ruff-check", "ruff-format"],
)
def test_ruff(argv: tuple[str, ...]) -> None:
    ruff = shutil.which("ruff")
    assert ruff is not None, "ruff is a test dependency: pip install -e '.[test]'"
    proc = run(ruff, *argv[1:])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict() -> None:
    proc = run(sys.executable, "-m", "mypy")
    assert proc.returncode == 0, proc.stdout + proc.stderr
