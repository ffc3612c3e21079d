"""The outcome stream's wording: the one line a failed report is told by."""

from __future__ import annotations

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
