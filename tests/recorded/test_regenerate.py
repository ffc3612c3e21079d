"""The recorded evidence is what the gates write today: regenerated and compared (slow)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.recorded.regenerate import HERE

ROOT = HERE.parents[1]


def _files(top: Path) -> dict[str, bytes]:
    """Every evidence file under ``top``'s scenario directories, by relative path."""
    return {
        p.relative_to(top).as_posix(): p.read_bytes()
        for d in sorted(top.iterdir())
        if d.is_dir() and d.name != "__pycache__"
        for p in sorted(d.iterdir())
        if p.is_file()
    }


@pytest.mark.slow
def test_the_recorded_evidence_is_what_the_gates_write_now(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tests.recorded.regenerate", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fresh, recorded = _files(tmp_path), _files(HERE)
    for rel in sorted(fresh.keys() | recorded.keys()):
        if fresh.get(rel) != recorded.get(rel):
            state = "missing" if rel not in recorded else "stale" if rel not in fresh else "differs"
            pytest.fail(
                f"tests/recorded/{rel} {state}: run python3 -m tests.recorded.regenerate "
                "(and read the diff: is the change meant?)"
            )
