"""The outcome stream's wording: the one line a failed report is told by."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from patchlane.child.channel import failure_line


@pytest.mark.parametrize(
    ("crash", "text", "line"),
    [
        # pytest's rewritten assert: the first line of the explanation, then where.
        (
            "assert 2 == 3\n +  where 2 = add(1, 1)",
            "    def test_a():\n>       assert add(1, 1) == 3\nE       assert 2 == 3\n\n"
            "tests/test_x.py:5: AssertionError\n",
            "assert 2 == 3 (tests/test_x.py:5: AssertionError)",
        ),
        (
            "ValueError: bad\nvalue",
            "x\ntests/t.py:8: ValueError",
            "ValueError: bad (tests/t.py:8: ValueError)",
        ),
        # No crash message (a plugin's string report): pytest's last line, as before.
        (None, "something broke\nat the end", "at the end"),
        # A crash message the last line already holds adds nothing.
        ("boom", "E   boom", "E   boom"),
    ],
)
def test_a_failure_line_is_the_crash_message_and_where(
    crash: str | None, text: str, line: str
) -> None:
    assert failure_line(crash, text) == line


ERASE = """\
from patchlane.child.channel import erase_startup_entry
erased = erase_startup_entry(b"PYTHONHASHSEED")
block = open("/proc/self/environ", "rb").read()
print(erased, b"PYTHONHASHSEED" in block, block.endswith(b"\\0" * 3))
"""


@pytest.mark.parametrize(
    ("order", "said"),
    [
        # Last in the start-up block: blanked, NUL bytes where it was.
        (("PATH", "PYTHONPATH", "PYTHONHASHSEED"), "True False True"),
        # Not last: the C library still points at what follows, so nothing moves.
        (("PYTHONHASHSEED", "PATH", "PYTHONPATH"), "False True False"),
    ],
)
def test_the_drawn_seed_is_blanked_from_the_start_up_block_only_when_last(
    order: tuple[str, ...], said: str
) -> None:
    values = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": os.fspath(Path(__file__).resolve().parents[2] / "src"),
        "PYTHONHASHSEED": "4242",
    }
    proc = subprocess.run(
        [sys.executable, "-c", ERASE],
        env={name: values[name] for name in order},
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.split() == said.split()
