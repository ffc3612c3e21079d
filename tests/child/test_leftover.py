"""``leftover``: what a test leaves behind for later tests, seen in this process on real
state (each change undone after), and folded by the parent into ``TestRun.left``."""

from __future__ import annotations

import importlib
import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from patchlane.child.leftover import StateWatch
from patchlane.formats.replay_report import ReplayReport
from patchlane.formats.status import Status
from patchlane.lanes.replay.fold import fold
from patchlane.lanes.replay.widen import Widened, rule_of, suite_files, with_widened


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Path]:
    """A tree with a module ``shared_limits`` imported from it (removed after)."""
    (tmp_path / "shared_limits.py").write_text("LIMIT = 10\n_cache = None\n", encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    importlib.import_module("shared_limits")
    yield tmp_path
    sys.path.remove(str(tmp_path))
    sys.modules.pop("shared_limits", None)


def test_nothing_left_is_nothing(tree: Path) -> None:
    watch = StateWatch(str(tree))
    watch.start()
    assert watch.after() == []


def test_a_variable_set_through_an_alias_is_seen_once(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATCHLANE_TEST_PROBE", "before")
    watch = StateWatch(str(tree))
    watch.start()
    settings = os.environ
    settings["PATCHLANE_TEST_PROBE"] = "3"
    assert watch.after() == ["env PATCHLANE_TEST_PROBE"]
    assert watch.after() == []  # reported once


def test_cwd_and_sys_path_are_seen(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    watch = StateWatch(str(tree))
    watch.start()
    monkeypatch.chdir(tree)
    monkeypatch.syspath_prepend(str(tree / "lib"))
    assert watch.after() == ["cwd", "sys.path"]


def test_a_module_attribute_rebound_through_vars_is_seen(tree: Path) -> None:
    watch = StateWatch(str(tree))
    watch.start()
    vars(sys.modules.get("shared_limits"))["LIMIT"] = 3
    assert watch.after() == ["shared_limits.LIMIT"]


_FMT = """\
OPTIONS = {"places": 2}
UNITS = ["m", "cm"]


def number(x, places=2):
    return f"{x:.{places}f}"


class Formatter:
    places = 2
"""


@pytest.fixture
def fmt(tree: Path) -> Iterator[types.ModuleType]:
    """A module of the tree with a dict, a list, a function with a default and a class."""
    (tree / "shared_fmt.py").write_text(_FMT, encoding="utf-8")
    yield importlib.import_module("shared_fmt")
    sys.modules.pop("shared_fmt", None)


def test_state_changed_in_place_through_a_local_name_is_seen_once(
    fmt: types.ModuleType, tree: Path
) -> None:
    watch = StateWatch(str(tree))
    watch.start()
    shown = sys.modules["shared_fmt"]  # no binding of the module changes below
    shown.OPTIONS.update(places=3)
    shown.UNITS.append("mm")
    shown.number.__defaults__ = (3,)
    type(shown.Formatter()).places = 3
    assert sorted(watch.after()) == [
        "shared_fmt.Formatter (in place)",
        "shared_fmt.OPTIONS (in place)",
        "shared_fmt.UNITS (in place)",
        "shared_fmt.number (in place)",
    ]
    assert watch.after() == []  # reported once
    shown.OPTIONS["places"] = 3  # an equal value again is no change
    assert watch.after() == []


def test_a_test_case_class_that_unittest_writes_is_left_to_it(tree: Path) -> None:
    """unittest writes a TestCase's own entries as it runs the class (at the base as at the
    head): reading them in place would only ever find the framework. Another class of the
    same module changed in place still shows."""
    (tree / "shared_case.py").write_text(
        "import unittest\n\n\nclass Plain:\n    n = 1\n\n\n"
        "class Case(unittest.TestCase):\n    def test_one(self):\n        pass\n",
        encoding="utf-8",
    )
    module = importlib.import_module("shared_case")
    try:
        watch = StateWatch(str(tree))
        watch.start()
        module.Case.doClassCleanups()  # unittest sets Case.tearDown_exceptions
        assert "tearDown_exceptions" in vars(module.Case)
        assert watch.after() == []
        module.Plain.n = 2
        assert watch.after() == ["shared_case.Plain (in place)"]
    finally:
        sys.modules.pop("shared_case", None)


def test_a_big_table_is_not_read_item_by_item(tree: Path) -> None:
    (tree / "shared_table.py").write_text("TABLE = dict.fromkeys(range(6000))\n", encoding="utf-8")
    module = importlib.import_module("shared_table")
    try:
        watch = StateWatch(str(tree))
        watch.start()
        module.TABLE[1] = "x"
        assert watch.after() == []
    finally:
        sys.modules.pop("shared_table", None)


def test_a_public_name_of_the_standard_library_is_seen(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    watch = StateWatch(str(tree))
    watch.start()
    monkeypatch.setattr("json.dumps", lambda *a, **k: "{}")
    assert watch.after() == ["json.dumps"]


def test_a_planted_module_is_seen_and_a_real_import_is_not(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    watch = StateWatch(str(tree))
    watch.start()
    importlib.import_module("colorsys")  # a real import: the import system made it
    monkeypatch.setitem(sys.modules, "planted_probe", types.ModuleType("other"))
    assert watch.after() == ["sys.modules[planted_probe]"]


def test_the_parent_folds_what_was_left_with_the_node_after_which() -> None:
    records: list[dict[str, Any]] = [
        {"collected": ["t.py::a", "t.py::b"]},
        {"n": "t.py::a", "w": "call", "o": "passed"},
        {"left": ["env X", "quota.LIMIT"], "by": "t.py::a"},
        {"fin": "t.py::a"},
        {"n": "t.py::b", "w": "call", "o": "passed"},
        {"left": ["env X"], "by": "t.py::b"},
        {"fin": "t.py::b"},
        {"exit": 0},
    ]
    run = fold(records, ["t.py::a", "t.py::b"], (), {})
    assert run.left == {"env X": "t.py::a", "quota.LIMIT": "t.py::a"}
    assert run.problems == ()


def test_a_widened_test_that_fails_at_the_head_only_fails_the_replay() -> None:
    report = ReplayReport(Status.PASS, "every node passed", passed=("t.py::a",))
    left = {"env X": "t.py::a"}
    rule = rule_of(left)
    assert rule == "the slice left state behind that the base does not: env X (after t.py::a)"
    widened = Widened(left, {"u.py::b": rule, "u.py::c": rule}, {"u.py::b": f"fails: {rule}"})
    out = with_widened(report, widened)
    assert out.status == Status.FAIL and out.failed == ("u.py::b",)
    assert out.widened == {"u.py::b": rule, "u.py::c": rule}
    assert "1 test(s) outside the slice fail after it" in out.reason
    assert with_widened(report, Widened(left, {"u.py::c": rule}, {})).status == Status.PASS
    assert with_widened(report, None) is report


def test_the_suites_files_come_from_the_collection_and_the_map() -> None:
    assert suite_files(["a.py::x", "a.py::y"], ["b.py::z"]) == ("a.py", "b.py")


def test_a_test_module_is_looked_at_at_its_own_tests_end_and_every_module_when_asked(
    tree: Path,
) -> None:
    (tree / "test_one.py").write_text("SEEN = []\n\n\ndef test_a():\n    pass\n")
    (tree / "test_two.py").write_text("LIMIT = 1\nCACHE = {}\n")
    one, two = (importlib.import_module(m) for m in ("test_one", "test_two"))
    try:
        watch = StateWatch(str(tree))
        watch.start([one, two])
        one.SEEN = [1]
        two.LIMIT = 2
        two.CACHE["k"] = 1
        # At one's test's end: its own module, not the other test module's...
        assert watch.after(one, everything=False) == ["test_one.SEEN"]
        assert watch.after(one, everything=False) == []
        # ... which the next look at everything sees (a test file's first test's end).
        assert watch.after(one) == ["test_two.CACHE (in place)", "test_two.LIMIT"]
        assert watch.after(two, everything=False) == []
        # A module that is not a test module is looked at at every test's end.
        vars(sys.modules["shared_limits"])["LIMIT"] = 4
        assert watch.after(None, everything=False) == ["shared_limits.LIMIT"]
    finally:
        for name in ("test_one", "test_two"):
            sys.modules.pop(name, None)
