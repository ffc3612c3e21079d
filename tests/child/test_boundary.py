"""``boundary`` and ``tripwire``'s judging machinery, compared in this process on the real
import system, a real pluggy plugin manager and unittest itself (each change undone after)."""

from __future__ import annotations

import sys
import types
import unittest
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pluggy
import pytest
from _pytest.config import PytestPluginManager

from patchlane.child import boundary, tripwire


class _Finder:
    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        return None


@pytest.fixture
def meta_path() -> Iterator[list[Any]]:
    """``sys.meta_path`` as it was, put back after the test."""
    held = list(sys.meta_path)
    yield held
    sys.meta_path[:] = held


def test_a_finder_put_ahead_of_the_import_system_is_a_change(meta_path: list[Any]) -> None:
    saved = boundary.take_imports()
    assert boundary.imports_changed(saved) == []
    sys.meta_path.insert(0, _Finder())
    assert boundary.imports_changed(saved) == [
        "the import system's sys.meta_path was changed ahead of its entries (_Finder)"
    ]
    del sys.meta_path[0]
    assert boundary.imports_changed(saved) == []


def test_a_finder_appended_behind_them_is_not(meta_path: list[Any]) -> None:
    saved = boundary.take_imports()
    sys.meta_path.append(_Finder())  # what six's importer does: it finds only its own names
    assert boundary.imports_changed(saved) == []


def test_a_replaced_list_a_planted_finder_and_a_shadowed_method_are_changes(
    meta_path: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    instance = _Finder()
    sys.meta_path.append(instance)
    saved = boundary.take_imports()
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setitem(sys.path_importer_cache, "/nowhere/tests", _Finder())
    monkeypatch.setattr(instance, "find_spec", lambda *a: None, raising=False)
    assert boundary.imports_changed(saved) == [
        "the import system's sys.meta_path was replaced",
        "the import system's _Finder finder gained a method of its own",
        "the import system's sys.path_importer_cache holds a finder (_Finder)",
    ]


_GENUINE = "def pytest_collection_modifyitems(items):\n    items.reverse()\n"


class _Start:
    """A plugin held from the start."""

    def pytest_runtest_logreport(self, report: object) -> None:
        return None


def _manager() -> PytestPluginManager:
    """pytest's own plugin manager (which takes unmarked ``pytest_*`` functions as hooks)."""
    manager = PytestPluginManager()
    manager.register(_Start(), "start")
    return manager


def _module(name: str, source: str, file: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = file
    exec(compile(source, file, "exec"), module.__dict__)  # noqa: S102 - the plugin under test
    return module


def test_a_module_plugin_whose_code_is_its_file_is_not_a_change(tmp_path: Path) -> None:
    manager = _manager()
    saved = boundary.take_plugins(manager)
    file = tmp_path / "conftest.py"
    file.write_text(_GENUINE, encoding="utf-8")
    manager.register(_module("conftest", _GENUINE, str(file)), str(file))
    assert boundary.plugins_changed(saved) == []


def test_a_plugin_whose_hooks_come_from_a_helper_is_not_a_change(tmp_path: Path) -> None:
    manager = _manager()
    saved = boundary.take_plugins(manager)
    helper = tmp_path / "helper.py"
    helper.write_text("import os\n\n\n" + _GENUINE, encoding="utf-8")
    hooks = _module("helper", helper.read_text(encoding="utf-8"), str(helper))
    conftest = types.ModuleType("conftest")
    conftest.__file__ = str(tmp_path / "conftest.py")
    conftest.pytest_collection_modifyitems = hooks.pytest_collection_modifyitems  # type: ignore[attr-defined]
    manager.register(conftest, conftest.__file__)
    assert boundary.plugins_changed(saved) == []


def test_code_compiled_under_a_real_files_name_at_another_line_is_a_change() -> None:
    manager = _manager()
    saved = boundary.take_plugins(manager)
    real = sys.modules["_pytest.main"].__file__
    assert real is not None  # it defines pytest_collection_modifyitems, at another line
    manager.register(_module("helpers", _GENUINE, real), "helpers")
    (phrase,) = boundary.plugins_changed(saved)
    assert "which does not define it" in phrase


def test_a_plugin_that_claims_a_file_it_did_not_come_from_is_a_change(tmp_path: Path) -> None:
    manager = _manager()
    saved = boundary.take_plugins(manager)
    fake = "/usr/lib/python3/dist-packages/pytest_timing_helpers.py"
    manager.register(_module("helpers", _GENUINE, fake), "helpers")
    (phrase,) = boundary.plugins_changed(saved)
    assert phrase.startswith("a pytest plugin (module, code in ") and fake[-40:] in phrase
    assert phrase.endswith("which does not define it) was registered during the run")


def test_a_plugin_object_and_a_hand_made_implementation_are_changes() -> None:
    manager = _manager()
    saved = boundary.take_plugins(manager)

    class Green:
        def pytest_runtest_logreport(self, report: object) -> None:
            return None

    manager.register(Green(), "green")
    assert boundary.plugins_changed(saved) == [
        "a pytest plugin (Green, not a module) was registered during the run"
    ]
    manager.unregister(name="green")
    caller = manager.hook.pytest_runtest_logreport
    impl = pluggy.HookImpl(manager.get_plugin("start"), "start", Green().pytest_runtest_logreport, {
        "wrapper": False, "hookwrapper": False, "optionalhook": False,
        "tryfirst": False, "trylast": False, "specname": None,
    })  # fmt: skip
    caller._hookimpls.append(impl)
    (phrase,) = boundary.plugins_changed(saved)
    assert phrase.startswith("a pytest_runtest_logreport implementation (")


def test_unittest_asserts_are_compared_by_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    spaces, functions = tripwire.take(("unittest.case",))
    assert tripwire.unchanged(spaces)
    assert tripwire.compare(spaces, functions, (), None, _same=tripwire.unchanged) == []
    monkeypatch.setattr(unittest.TestCase, "assertEqual", lambda *a, **k: None)
    assert not tripwire.unchanged(spaces)
    assert tripwire.compare(spaces, functions, (), None) == [
        "unittest's TestCase.assertEqual was replaced"
    ]
    monkeypatch.undo()
    assert tripwire.compare(spaces, functions, (), None, _same=tripwire.unchanged) == []


def test_the_import_systems_loaders_are_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    spaces, functions = tripwire.take(tripwire.MACHINERY)
    loader = sys.modules["_frozen_importlib_external"].SourceLoader
    monkeypatch.setattr(loader, "source_to_code", lambda self, data, path: None)
    monkeypatch.setattr("builtins.compile", lambda *a, **k: None)
    changed = tripwire.compare(spaces, functions, (), None)
    monkeypatch.undo()
    assert changed == [
        "the import system's builtins.compile was replaced",
        "the import system's SourceLoader.source_to_code was replaced",
    ]


def test_the_reason_names_the_rule() -> None:
    why = tripwire.describe(["unittest's TestCase.assertEqual was replaced"])
    assert why == (
        "judging machinery rebound by the code under test: unittest's TestCase.assertEqual "
        "was replaced during the run: outcomes cannot be believed"
    )
