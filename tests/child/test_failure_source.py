"""``replay_run._statements_found_once``: pytest's reports of failures are the same text with
the statement lookup made once per file text, for failures at several lines of one file and
for a file edited between them; in a real interpreter of its own (the lookup is pytest's,
patched process-wide)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

_SRC = str(Path(__file__).resolve().parents[2] / "src")

FIRST = """\
def first():
    x = 1
    assert (
        x == 2
    ), "first"


def second():
    y = [1,
         2]
    assert y == [3], "second"
"""

# The same file edited: the second failure moved down three lines.
EDITED = FIRST.replace("def second():\n", "def second():\n    pass\n    pass\n    pass\n")

_PROBE = """
import importlib, json, sys
sys.path[:0] = [{src!r}, {here!r}]
from _pytest._code import ExceptionInfo
from _pytest._code import code


def reports():
    texts = []
    for text in ({first!r}, {edited!r}):
        with open({here!r} + "/failing.py", "w") as f:
            f.write(text)
        sys.modules.pop("failing", None)
        importlib.invalidate_caches()
        import failing
        for name in ("first", "second", "first", "second"):
            try:
                getattr(failing, name)()
            except AssertionError:
                info = ExceptionInfo.from_current()
                texts.append(str(info.getrepr(style="long")))
    return texts


plain = reports()
from patchlane.child.replay_run import _statements_found_once
find = code.getstatementrange_ast
_statements_found_once()
assert code.getstatementrange_ast is not find
once = reports()
print(json.dumps([plain, once]))
"""


@pytest.mark.slow
def test_failures_read_the_same_with_the_lookup_made_once(tmp_path: Path) -> None:
    probe = _PROBE.format(src=_SRC, here=str(tmp_path), first=FIRST, edited=EDITED)
    done = subprocess.run(
        [sys.executable, "-B", "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    plain, once = json.loads(done.stdout)
    assert once == plain
    # The statements themselves, each at its own line, in each version of the file.
    assert "x == 2" in once[0] and "assert y == [3]" in once[1]
    assert once[4] == once[0] and once[5] != once[1] and "pass" in once[5]
