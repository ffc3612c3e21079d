"""``calls.CallRecorder``: the watched functions' calls are recorded, whichever way it watches
(``sys.monitoring`` on Python 3.12+, ``sys.setprofile`` on 3.11 or when no monitoring tool id
is free), in a real pytest process of their own; the gate's use of them is
``tests/lanes/replay/test_witness.py`` and ``tests/gate/test_witness.py``.

Run this file under each interpreter the project supports: which path it takes is the one
that interpreter has (``test_the_recorder_watches_the_way_this_python_can``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

_SRC = str(Path(__file__).resolve().parents[2] / "src")

MODULE = """\
def watched(n):
    return n * 2


def recursive(n):
    return 0 if n == 0 else recursive(n - 1) + 1


def raises_first(n):
    if n == 0:
        raise ValueError(n)
    return n


def unwatched(n):
    return watched(n) + 1
"""

TESTS = """\
import pytest

from mod import raises_first, recursive, unwatched, watched


@pytest.fixture
def around():
    watched(100)  # setup
    yield
    watched(200)  # teardown


def test_calls(around):
    for i in range(50):
        unwatched(i)  # the unwatched caller: decided once, then never looked at again
    assert watched(1) == 2
    assert recursive(2) == 2
    with pytest.raises(ValueError):
        raises_first(0)
    assert raises_first(3) == 3


def test_more():
    for i in range(10):
        watched(i)
"""

# A pytest plugin (``-p``) that registers the recorder as the run child does and writes what
# it sends, and how it watched, to ``out.json``.
PLUGIN = """\
import json
import sys

sys.path.insert(0, {src!r})
from patchlane.child.calls import CallRecorder

_sent = []


def pytest_configure(config):
    if {take_tools!r}:
        for tool in (3, 4):
            sys.monitoring.use_tool_id(tool, "another tool")
    recorder = CallRecorder(
        str(config.rootpath), {{str(config.rootpath / "mod.py"): {names!r}}}, _sent.append
    )
    config._recorder = recorder
    config.pluginmanager.register(recorder)


def pytest_unconfigure(config):
    recorder = config._recorder
    codes = {{c.co_qualname: k for c, k in recorder.codes.items() if c.co_filename.endswith("/mod.py")}}
    with open("out.json", "w") as f:
        json.dump({{"sent": _sent, "monitor": recorder._monitor is not None, "codes": codes}}, f)
"""

NAMES = ["watched", "recursive", "raises_first"]


def _record(tmp_path: Path, *, take_tools: bool = False) -> dict[str, object]:
    (tmp_path / "mod.py").write_text(MODULE)
    (tmp_path / "test_mod.py").write_text(TESTS)
    (tmp_path / "recording.py").write_text(
        PLUGIN.format(src=_SRC, take_tools=take_tools, names=NAMES)
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "recording"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    found: dict[str, object] = json.loads((tmp_path / "out.json").read_text())
    return found


def _recorded(found: dict[str, object]) -> list[str]:
    (sent,) = found["sent"]  # type: ignore[misc]
    return [qualname for _, qualname, _, _ in sent["calls"]]


def _check(found: dict[str, object]) -> None:
    recorded = _recorded(found)
    # Setup's call first, then the test's, then teardown's: 5 of ``watched`` (the first
    # ones); each frame of the recursion its own call; a call that raised is not one, but
    # the same function's next call is.
    assert recorded.count("watched") == 5
    assert recorded.count("recursive") == 3
    assert recorded.count("raises_first") == 1
    # The unwatched caller was decided once: not watched.
    assert found["codes"] == {
        "watched": ["mod", "watched"],
        "recursive": ["mod", "recursive"],
        "raises_first": ["mod", "raises_first"],
        "unwatched": None,
    }


@pytest.mark.slow
def test_the_recorder_watches_the_way_this_python_can(tmp_path: Path) -> None:
    found = _record(tmp_path)
    _check(found)
    assert found["monitor"] is (sys.version_info >= (3, 12))


@pytest.mark.slow
@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is Python 3.12+")
def test_with_every_monitoring_tool_id_taken_the_recorder_profiles(tmp_path: Path) -> None:
    found = _record(tmp_path, take_tools=True)
    _check(found)
    assert found["monitor"] is False
