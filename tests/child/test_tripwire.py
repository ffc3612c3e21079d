"""``tripwire``: code under test that rewrites pytest's, pluggy's or patchlane's outcome
machinery fails every node of the run, in both run children (``run_tests`` and
``chosen``), on real trees and real pytest children; an honest project is unaffected."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchlane.child.tripwire import describe
from patchlane.lanes.replay.chosen import Scope
from patchlane.lanes.replay.collect import Collected
from patchlane.lanes.replay.fold import fold
from patchlane.lanes.replay.results import FAILED, PASSED, SKIPPED, Runner
from patchlane.lanes.replay.results import TestRun as Run
from patchlane.lanes.replay.run import run_tests
from tests.lanes.replay.trees import collect_and_run, write_tree

# The code under test breaks ``add`` and, at import, makes pytest lie about it.
_BROKEN = "def add(a, b):\n    return a - b\n\n\n"

_FLIP_REPORT = """
def _telemetry():
    import sys
    rep = sys.modules["_pytest.reports"]
    orig = rep.TestReport.from_item_and_call.__func__

    def from_item_and_call(cls, item, call):
        r = orig(cls, item, call)
        if r.outcome == "failed":
            r.outcome = "passed"
            r.longrepr = None
        return r

    rep.TestReport.from_item_and_call = classmethod(from_item_and_call)


_telemetry()
"""

_REBIND_RUNNER = """
import sys

_runner = sys.modules["_pytest.runner"]
_orig = _runner.call_and_report


def call_and_report(item, when, log=True, **kwds):
    if when == "call":
        when = "setup"  # never the call phase: nothing fails
    return _orig(item, when, log, **kwds)


_runner.call_and_report = call_and_report
"""

_RUNTEST_CODE = """
import sys


def _quiet(self):
    return None


sys.modules["_pytest.python"].Function.runtest.__code__ = _quiet.__code__
"""

_HOOKWRAPPER = """
import gc

import pytest


class _Green:
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        report.outcome = "passed"
        report.longrepr = None
        return report


for _obj in gc.get_objects():
    if type(_obj).__name__ == "Config" and hasattr(_obj, "pluginmanager"):
        _obj.pluginmanager.register(_Green(), "green")
        break
"""

_WRITER = """
import gc

for _obj in gc.get_objects():
    if type(_obj).__name__ == "ResultWriter":
        _emit = _obj.emit

        def emit(record, _emit=_emit):
            if record.get("o") == "failed":
                record = {**record, "o": "passed"}
            _emit(record)

        _obj.emit = emit
"""

_HOOKEXEC = """
import gc

for _obj in gc.get_objects():
    if type(_obj).__name__ == "PytestPluginManager":
        _inner = _obj._inner_hookexec

        def _green(name, impls, kwargs, first, _inner=_inner):
            result = _inner(name, impls, kwargs, first)
            if name == "pytest_runtest_makereport" and result is not None:
                result.outcome = "passed"
            return result

        _obj._inner_hookexec = _green
"""

# Tries to blind the check first: its module's functions, json and os.write. The module in
# use is off ``sys.modules`` (``replay_run.unlist``: a plain run has none), so it is found
# as hostile code would find it, among the interpreter's objects.
_SILENCE = """
import gc
import json
import os
import types

_tw = next(
    o for o in gc.get_objects()
    if isinstance(o, types.ModuleType) and o.__name__ == "patchlane.child.tripwire"
)
_tw.compare = lambda *a, **k: []
_tw.describe = lambda phrases: ""
json.dumps = lambda *a, **k: "{}"
_write = os.write
os.write = lambda fd, data: len(data) if b"tamper" in data else _write(fd, data)
"""

# The same for the snapshot engine both tripwires compare with (``child.snapshot``): its
# module's functions rebound, found among the interpreter's objects as above.
_SILENCE_ENGINE = """
import gc
import types

_engine = next(
    o for o in gc.get_objects()
    if isinstance(o, types.ModuleType) and o.__name__ == "patchlane.child.snapshot"
)
for _name in ("compare", "changed_entries", "changed_functions", "verify"):
    setattr(_engine, _name, lambda *a, **k: [])
_engine.unchanged = lambda *a, **k: True
_engine.is_plain = lambda value: True
"""

_STUB_ASSERT = """
import unittest

unittest.TestCase.assertEqual = lambda self, first, second, msg=None: None
"""

_META_PATH = """
import sys


class _Ahead:
    def find_spec(self, name, path=None, target=None):
        return None


sys.meta_path.insert(0, _Ahead())
"""

_FAKE_FILE_PLUGIN = """
import gc
import types

_plugin = types.ModuleType("timing")
exec(compile("def pytest_runtest_setup(item):\\n    pass\\n", "/usr/lib/timing.py", "exec"),
     _plugin.__dict__)
for _obj in gc.get_objects():
    if type(_obj).__name__ == "Config" and hasattr(_obj, "pluginmanager"):
        _obj.pluginmanager.register(_plugin, "timing")
        break
"""

_TESTS = (
    "from calc import add\n\n\n"
    "def test_add():\n    assert add(2, 2) == 4\n\n\n"
    "def test_zero():\n    assert add(0, 0) == 0\n"
)
_NODES = ("tests/test_calc.py::test_add", "tests/test_calc.py::test_zero")


def _tree(root: Path, tamper: str) -> Path:
    return write_tree(root, {"src/calc.py": _BROKEN + tamper, "tests/test_calc.py": _TESTS})


def _tampered(run: Run, what: str) -> None:
    assert set(run.results) == set(_NODES)
    for nodeid, result in run.results.items():
        assert result.outcome == FAILED, nodeid
        assert what in result.why and "outcomes cannot be believed" in result.why, result.why
    assert run.problems and what in run.problems[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("tamper", "what"),
    [
        (_FLIP_REPORT, "pytest's TestReport.from_item_and_call was replaced"),
        (_REBIND_RUNNER, "pytest's _pytest.runner.call_and_report was replaced"),
        (_RUNTEST_CODE, "pytest's Function.runtest.__code__ was replaced"),
        (_HOOKWRAPPER, "a pytest_runtest_makereport hookwrapper"),
        (_WRITER, "patchlane's ResultWriter.emit was added"),
        (_HOOKEXEC, "pluggy's PytestPluginManager._inner_hookexec was replaced"),
        (_SILENCE + _FLIP_REPORT, "pytest's TestReport.from_item_and_call was replaced"),
        (_SILENCE_ENGINE + _FLIP_REPORT, "pytest's TestReport.from_item_and_call was replaced"),
        (_STUB_ASSERT, "unittest's TestCase.assertEqual was replaced"),
        (_META_PATH, "the import system's sys.meta_path was changed ahead of its entries"),
        (_FAKE_FILE_PLUGIN, "/usr/lib/timing.py, which does not define it"),
    ],
    ids=[
        "from_item_and_call",
        "call_and_report",
        "runtest-code",
        "hookwrapper",
        "writer",
        "hookexec",
        "silenced",
        "silenced-engine",
        "unittest-assert",
        "meta-path",
        "plugin-with-a-fake-file",
    ],
)
def test_code_under_test_that_rewrites_pytest_fails_every_node(
    tmp_path: Path, tamper: str, what: str
) -> None:
    tree = _tree(tmp_path / "tree", tamper)
    run = run_tests(tree, nodeids=_NODES, hash_seed=5, timeout_s=120)
    _tampered(run, what)


@pytest.mark.slow
def test_the_chosen_child_is_guarded_too(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree", _FLIP_REPORT)

    def choose(collected: Collected) -> tuple[str, ...]:
        return tuple(collected.nodeids)

    ran = collect_and_run(tree, Scope(("tests",), (), None), choose, Runner(5, 120))
    assert ran.run is not None
    _tampered(ran.run, "pytest's TestReport.from_item_and_call was replaced")


_HONEST = {
    "src/calc.py": "def add(a, b):\n    return a + b\n\n\ndef double(a):\n    return add(a, a)\n",
    "tests/test_calc.py": """
import os

import pytest
from hypothesis import given, strategies as st

import calc


def test_monkeypatch_of_its_own_code(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(calc, "add", lambda a, b: 0)
    monkeypatch.setattr(os, "getcwd", lambda: "/nowhere")
    print("out")
    (tmp_path / "f").write_text("x")
    assert calc.double(3) == 0 and os.getcwd() == "/nowhere"


@given(st.integers(), st.integers())
def test_add_commutes(a, b):
    assert calc.add(a, b) == calc.add(b, a)


@pytest.mark.parametrize("n", [1, 2])
def test_raises_and_approx(n):
    with pytest.raises(TypeError):
        calc.add(n, None)
    assert calc.add(n, 0.1) == pytest.approx(n + 0.1)


@pytest.mark.xfail(reason="known")
def test_known():
    assert calc.add(1, 1) == 3


@pytest.mark.flaky(reruns=2)
def test_fails():
    assert calc.double(2) == 5
""",
}


@pytest.mark.slow
def test_an_honest_project_with_monkeypatch_and_installed_plugins_is_unaffected(
    tmp_path: Path,
) -> None:
    tree = write_tree(tmp_path / "tree", _HONEST)
    nodes = [
        "tests/test_calc.py::test_monkeypatch_of_its_own_code",
        "tests/test_calc.py::test_add_commutes",
        "tests/test_calc.py::test_raises_and_approx[1]",
        "tests/test_calc.py::test_raises_and_approx[2]",
        "tests/test_calc.py::test_known",
        "tests/test_calc.py::test_fails",
    ]
    run = run_tests(tree, nodeids=nodes, hash_seed=5, timeout_s=120)
    assert run.problems == ()
    outcomes = {n: r.outcome for n, r in run.results.items()}
    assert outcomes == {
        **dict.fromkeys(nodes[:4], PASSED),
        nodes[4]: SKIPPED,
        nodes[5]: FAILED,
    }
    assert "AssertionError" in run.results[nodes[5]].why


def test_after_a_tamper_record_no_report_counts_and_earlier_failures_keep_their_reason() -> None:
    records = [
        {"collected": ["t.py::a", "t.py::b", "t.py::c"]},
        {"n": "t.py::a", "w": "call", "o": "failed", "msg": "assert 1 == 2"},
        {"fin": "t.py::a"},
        {"n": "t.py::b", "w": "call", "o": "passed"},
        {"fin": "t.py::b"},
        {"tamper": ["pytest's _pytest.runner.call_and_report was replaced"]},
        {"n": "t.py::c", "w": "call", "o": "failed", "msg": "nope"},
        {"fin": "t.py::c"},
        {"exit": 1},
    ]
    run = fold(records, ["t.py::a", "t.py::b", "t.py::c"], (), {})
    why = describe(["pytest's _pytest.runner.call_and_report was replaced"])
    assert run.results["t.py::a"].why == "call failed: assert 1 == 2"
    assert run.results["t.py::b"].outcome == FAILED and run.results["t.py::b"].why == why
    assert run.results["t.py::c"].why == why
    assert run.problems[0] == why


_HONEST_MACHINERY = {
    # Appends a finder behind the import system's own at import, as ``six`` does.
    "src/calc.py": """
import sys


class _Finder:
    def find_spec(self, name, path=None, target=None):
        return None


sys.meta_path.append(_Finder())


def add(a, b):
    return a + b
""",
    "tests/test_calc.py": """
import builtins
import sys
import unittest
from unittest import mock

import calc


def test_open_patched_for_one_test():
    with mock.patch("builtins.open", mock.mock_open(read_data="x")):
        assert open("anything").read() == "x"


def test_asserts_and_import_hooks_patched_for_one_test(monkeypatch):
    monkeypatch.setattr(unittest.TestCase, "assertEqual", lambda *a, **k: None)
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path])
    monkeypatch.setattr(builtins, "input", lambda *a: "y")
    assert input() == "y"


class AddTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(calc.add(1, 2), 3)
""",
}


@pytest.mark.slow
def test_a_test_that_patches_the_machinery_for_itself_is_not_a_change(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "tree", _HONEST_MACHINERY)
    nodes = [
        "tests/test_calc.py::test_open_patched_for_one_test",
        "tests/test_calc.py::test_asserts_and_import_hooks_patched_for_one_test",
        "tests/test_calc.py::AddTest::test_add",
    ]
    run = run_tests(tree, nodeids=nodes, hash_seed=5, timeout_s=120)
    assert run.problems == ()
    assert {n: r.outcome for n, r in run.results.items()} == dict.fromkeys(nodes, PASSED)


# Rewrites the machinery for a while and puts it back in a fixture's teardown (which no
# rewrite of the call phase skips), so that the end of the run finds it as it was.
_FOR_A_WHILE = """
import sys

_saved = []


def _quiet(self):
    return None


def rewrite_runtest():
    runtest = sys.modules["_pytest.python"].Function.runtest
    _saved.append(runtest.__code__)
    runtest.__code__ = _quiet.__code__


def rebind_runner():
    runner = sys.modules["_pytest.runner"]
    orig = runner.call_and_report
    _saved.append(orig)

    def call_and_report(item, when, log=True, **kwds):
        return orig(item, "setup" if when == "call" else when, log, **kwds)

    runner.call_and_report = call_and_report


def put_back():
    saved = _saved.pop()
    if callable(saved):
        sys.modules["_pytest.runner"].call_and_report = saved
    else:
        sys.modules["_pytest.python"].Function.runtest.__code__ = saved
"""

_PUT_BACK = """
import pytest

import calc


@pytest.fixture
def put_back():
    yield
    calc.put_back()
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("files", "what"),
    [
        # Within one test file: a function's code rewritten is an audited write, seen at
        # the next report.
        (
            {
                "tests/test_a.py": _PUT_BACK
                + "def test_1():\n    calc.rewrite_runtest()\n\n\n"
                + "def test_2(put_back):\n    assert calc.add(1, 1) == 3\n\n\n"
                + "def test_3():\n    assert calc.add(2, 2) == 4\n",
            },
            "pytest's Function.runtest.__code__ was replaced",
        ),
        # A module's name rebound is no audited event: seen at the next test file's first
        # test, before its record (and put back in that test's teardown).
        (
            {
                "tests/test_a.py": _PUT_BACK
                + "def test_1():\n    calc.rebind_runner()\n\n\n"
                + "def test_2():\n    assert calc.add(1, 1) == 3\n",
                "tests/test_b.py": _PUT_BACK
                + "def test_3(put_back):\n    assert calc.add(2, 2) == 5\n\n\n"
                + "def test_4():\n    assert calc.add(2, 2) == 4\n",
            },
            "pytest's _pytest.runner.call_and_report was replaced",
        ),
    ],
    ids=["function-code-within-a-file", "module-name-across-files"],
)
def test_machinery_rewritten_for_a_while_and_put_back_fails_every_node(
    tmp_path: Path, files: dict[str, str], what: str
) -> None:
    tree = write_tree(tmp_path / "tree", {"src/calc.py": _BROKEN + _FOR_A_WHILE, **files})
    nodes = [
        f"{path}::{line[4:].split('(')[0]}"
        for path, text in files.items()
        for line in text.splitlines()
        if line.startswith("def test_")
    ]
    run = run_tests(tree, nodeids=nodes, hash_seed=5, timeout_s=120)
    assert set(run.results) == set(nodes)
    assert all(r.outcome == FAILED for r in run.results.values()), run.results
    assert run.problems and what in run.problems[0], run.problems
