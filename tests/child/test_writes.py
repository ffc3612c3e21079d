"""``writes``: the audit hook's count moves for every write of a function's parts and every
reach past Python's attribute rules, and for nothing else; in a real interpreter of its own
(an audit hook cannot be removed, so never in this one)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_SRC = str(Path(__file__).resolve().parents[2] / "src")

_PROBE = """
import sys
sys.path.insert(0, {src!r})
from patchlane.child import writes
count = writes.install()
assert writes.install() is count
def f(a=1, *, b=2):
    return a
def g():
    return 0
class C:
    x = 1
seen = []
def step(name, action):
    before = count()
    action()
    seen.append(f"{{name}}={{count() - before}}")
step("nothing", lambda: [f(), C.x, vars(C), open({path!r}).close(), id(f)])
step("class-attribute", lambda: setattr(C, "x", 2))
step("code", lambda: setattr(f, "__code__", g.__code__))
step("defaults", lambda: setattr(f, "__defaults__", (3,)))
step("kwdefaults", lambda: setattr(f, "__kwdefaults__", {{"b": 3}}))
step("delete", lambda: delattr(f, "__kwdefaults__"))
import gc
step("referents", lambda: gc.get_referents(C.__dict__))
step("objects", lambda: gc.get_objects())
import ctypes
step("ctypes", lambda: ctypes.c_int.from_address(id(C)))
print(" ".join(seen))
"""


@pytest.mark.slow
def test_the_count_moves_for_writes_of_function_parts_and_reaches_past_them(
    tmp_path: Path,
) -> None:
    probe = _PROBE.format(src=_SRC, path=__file__)
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    counts = dict(one.split("=") for one in out)
    # A class's namespace is not audited by CPython: the checks still compare it every time.
    assert counts["nothing"] == "0" and counts["class-attribute"] == "0"
    for moved in ("code", "defaults", "kwdefaults", "delete", "referents", "objects", "ctypes"):
        assert int(counts[moved]) >= 1, (moved, counts)


_WATCH = """
import sys
sys.path.insert(0, {src!r})
sys.path.insert(0, {tree!r})
from patchlane.child import writes
from patchlane.child.leftover import StateWatch
import shared
watch = StateWatch({tree!r}, writes.install())
watch.start()
print(watch.after())
shared.scale.__defaults__ = (3,)
print(watch.after())
shared.scale.__code__ = shared.other.__code__
print(watch.after())
print(watch.after())
"""


@pytest.mark.slow
def test_the_state_watch_with_the_count_still_sees_a_function_changed_in_place(
    tmp_path: Path,
) -> None:
    (tmp_path / "shared.py").write_text(
        "def scale(x, k=2):\n    return x * k\n\n\ndef other(x, k=2):\n    return x\n"
    )
    probe = _WATCH.format(src=_SRC, tree=str(tmp_path))
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    assert out == ["[]", "['shared.scale (in place)']", "['shared.scale (in place)']", "[]"]
