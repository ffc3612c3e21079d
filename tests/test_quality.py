"""Lint, format and strict typing are part of the test suite, so CI enforces them."""

from __future__ import annotations

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
    # This interpreter's ruff (a test dependency), whether or not its environment is active.
    proc = run(sys.executable, "-m", "ruff", *argv[1:])
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_mypy_strict() -> None:
    proc = run(sys.executable, "-m", "mypy")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_pre_commit_hooks_run_the_checks_this_module_runs() -> None:
    """The hooks in .pre-commit-config.yaml are the checks above, from the same environment:
    a hook that drifts (another tool, a pinned copy with other rules) fails here."""
    import yaml

    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text("utf-8"))
    hooks = {h["id"]: h for repo in config["repos"] for h in repo["hooks"]}
    assert [repo["repo"] for repo in config["repos"]] == ["local"]
    assert {h["id"]: (h["entry"], h["language"]) for h in hooks.values()} == {
        "ruff-check": ("ruff check --fix", "system"),
        "ruff-format": ("ruff format", "system"),
        "mypy": ("mypy", "system"),
    }
    assert hooks["mypy"]["pass_filenames"] is False  # the files come from pyproject.toml


SRC = ROOT / "src" / "patchlane"
EXAMPLE = SRC / "demo" / "example"


def _package_modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if EXAMPLE not in p.parents)


def test_the_contract_is_cited_from_the_repository() -> None:
    """Comments cite docs/architecture.md, never a file outside the repository."""
    hits = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in sorted(
            p for p in SRC.rglob("*") if p.is_file() and "__pycache__" not in p.parts
        )
        for n, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if "DESIGN.md" in line or "the seed" in line.lower()
    ]
    assert hits == []


@pytest.mark.slow
def test_no_module_imports_another_lanes_private_names() -> None:
    """A lane's folder is its boundary: code outside ``lanes/NAME/`` imports only that lane's
    public (non-underscore) names."""
    import ast

    lanes = SRC / "lanes"
    crossings = []
    for path in _package_modules():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.module is None:
                continue
            parts = node.module.split(".")
            if parts[:2] != ["patchlane", "lanes"] or len(parts) < 3:
                continue
            if lanes / parts[2] in path.parents:
                continue
            private = [a.name for a in node.names if a.name.startswith("_")]
            private += [p for p in parts[3:] if p.startswith("_") and p != "__init__"]
            if private:
                crossings.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.module} {private}")
    assert crossings == []
