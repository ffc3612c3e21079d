"""The static import graph: names from roots, absolute, relative and package imports."""

from __future__ import annotations

import ast

import pytest

from patchlane.lanes.replay.importgraph import build, imported_names, module_names

CHANGED_C = frozenset({"pkg.c"})


def test_module_names_per_root() -> None:
    roots = ("", "src")
    assert module_names("src/quota/__init__.py", roots) == ("src.quota", "quota")
    assert module_names("src/quota/limits.py", roots) == ("src.quota.limits", "quota.limits")
    assert module_names("tools/x.py", roots) == ("tools.x",)
    assert module_names("my-tests/x.py", roots) == ()  # not an identifier: not importable
    assert module_names("data.json", roots) == ()


def test_transitive_import_through_project_modules() -> None:
    sources = {
        "pkg/__init__.py": b"",
        "pkg/a.py": b"from pkg import b\n",
        "pkg/b.py": b"import pkg.c as c\n",
        "pkg/c.py": b"X = 1\n",
        "tests/test_a.py": b"from pkg.a import thing\n",
    }
    graph = build(sources, [""], ["tests/test_a.py"])
    reached = graph.reach("tests/test_a.py", CHANGED_C)
    assert reached == {"pkg.c": ("tests/test_a.py", "pkg/a.py", "pkg/b.py")}
    assert graph.files_reached("tests/test_a.py") == {
        "tests/test_a.py",
        "pkg/__init__.py",
        "pkg/a.py",
        "pkg/b.py",
        "pkg/c.py",
    }


def test_relative_imports_resolve_against_the_package() -> None:
    sources = {
        "pkg/__init__.py": b"from . import sub\n",
        "pkg/sub/__init__.py": b"",
        "pkg/sub/m.py": b"from ..c import X\nfrom .n import *\n",
        "pkg/sub/n.py": b"",
        "pkg/c.py": b"X = 1\n",
    }
    graph = build(sources, [""])
    assert {"pkg.c", "pkg.c.X", "pkg"} <= graph.imports["pkg/sub/m.py"]
    assert "pkg.sub.n" in graph.imports["pkg/sub/m.py"]
    assert "pkg.sub" in graph.imports["pkg/__init__.py"]
    assert graph.reach("pkg/sub/m.py", CHANGED_C) == {"pkg.c": ("pkg/sub/m.py",)}


def test_importing_a_submodule_imports_its_package() -> None:
    sources = {"pkg/__init__.py": b"", "pkg/m.py": b"", "t.py": b"import pkg.m\n"}
    graph = build(sources, [""])
    assert graph.reach("t.py", frozenset({"pkg"})) == {"pkg": ("t.py",)}


def test_src_layout_and_pytest_test_dirs_are_roots() -> None:
    sources = {
        "src/quota/__init__.py": b"from quota.limits import LIMIT\n",
        "src/quota/limits.py": b"",
        "tests/helpers.py": b"import quota\n",
        "tests/test_q.py": b"from helpers import make\n",
    }
    graph = build(sources, ["", "src"], ["tests/test_q.py"])
    assert "tests" in graph.roots
    changed = frozenset(module_names("src/quota/limits.py", graph.roots))
    assert set(graph.reach("tests/test_q.py", changed)) == {"quota.limits"}


def test_unrelated_modules_are_not_reached() -> None:
    sources = {"a.py": b"import json, os\n", "b.py": b"", "t.py": b"import a\n"}
    graph = build(sources, [""])
    assert graph.reach("t.py", frozenset({"b"})) == {}
    assert graph.files_reached("t.py") == {"t.py", "a.py"}


def test_imports_anywhere_count_and_bad_files_are_listed() -> None:
    sources = {
        "t.py": b"def f():\n    import b\n",
        "b.py": b"",
        "broken.py": b"def (:\n",
        "nul.py": b"x = 1\x00\n",
    }
    graph = build(sources, [""])
    assert graph.reach("t.py", frozenset({"b"})) == {"b": ("t.py",)}
    assert graph.unparsable == ("broken.py", "nul.py")


@pytest.mark.parametrize(
    "source",
    [
        "import importlib\nm = importlib.import_module('pkg.mod')\n",
        "from importlib import import_module\nm = import_module('pkg.mod')\n",
        "m = __import__('pkg.mod')\n",
        "import pytest\nm = pytest.importorskip('pkg.mod')\n",
        "pytest_plugins = ['pkg.mod']\n",
        "pytest_plugins = 'pkg.mod'\n",
    ],
)
def test_literal_dynamic_imports_count_as_imports(source: str) -> None:
    assert "pkg.mod" in imported_names(ast.parse(source), ("t",), is_package=False)


def test_a_relative_literal_import_module_is_resolved_against_its_package() -> None:
    source = "import importlib\nimportlib.import_module('.calc', package='billing')\n"
    assert "billing.calc" in imported_names(ast.parse(source), ("t",), is_package=False)


@pytest.mark.parametrize(
    "source",
    [
        "import importlib\ndef __getattr__(name):\n    return importlib.import_module('.' + name, __name__)\n",
        "import importlib\nname = 'x'\nimportlib.import_module(name)\n",
        "m = __import__(compute())\n",
    ],
)
def test_a_computed_import_reaches_every_project_module(source: str) -> None:
    sources = {
        "pkg/__init__.py": source.encode(),
        "pkg/a.py": b"",
        "pkg/b.py": b"",
        "tests/test_x.py": b"import pkg\n",
    }
    graph = build(sources, [""], ["tests/test_x.py"])
    assert {"pkg/a.py", "pkg/b.py"} <= graph.files_reached("tests/test_x.py")
