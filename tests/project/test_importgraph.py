"""The static import graph: names from roots, absolute, relative and package imports."""

from __future__ import annotations

import ast

import pytest

from patchlane.project.importgraph import build, imported_names, module_names

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


CLI_PROJECT = {
    "src/calc/__init__.py": b"",
    "src/calc/__main__.py": b"from calc import cli\n",
    "src/calc/core.py": b"def mean(xs):\n    return sum(xs) / len(xs)\n",
    "src/calc/cli.py": b"from calc.core import mean\n",
    "src/calc/other.py": b"",
    "scripts/my-tool.py": b"from calc import core\n",
}
CORE = frozenset({"calc.core"})


@pytest.mark.parametrize(
    "source",
    [
        "import subprocess, sys\nsubprocess.run([sys.executable, '-m', 'calc.cli', '1', '2'])\n",
        "import subprocess\nsubprocess.run('python -m calc.cli 1 2', shell=True)\n",
        "import subprocess\nsubprocess.run(['python', '-m', 'calc'])\n",
        "import subprocess\nsubprocess.run('python -m calc', shell=True)\n",
        "import subprocess, sys\nsubprocess.run([sys.executable, 'src/calc/cli.py'])\n",
        "import subprocess, sys\nsubprocess.run([sys.executable, './calc/cli.py'])\n",
        "import subprocess, sys\nsubprocess.run(f'{sys.executable} src/calc/cli.py')\n",
        "from unittest import mock\npatcher = mock.patch('calc.core.mean')\n",
        "ENTRY = 'calc.cli:main'\n",
        "import subprocess\nsubprocess.run(['python', 'scripts/my-tool.py'])\n",
    ],
)
def test_a_string_that_names_a_project_module_or_file_is_an_import_edge(source: str) -> None:
    sources = {**CLI_PROJECT, "tests/test_cli.py": source.encode()}
    graph = build(sources, ["", "src"], ["tests/test_cli.py"])
    assert set(graph.reach("tests/test_cli.py", CORE)) == {"calc.core"}


@pytest.mark.parametrize(
    "source",
    [
        "X = 'calc.nope'\n",  # names no project module (its prefix calc: the package only)
        "X = 'os.path'\n",
        "X = 'see calc for more'\n",  # a word without a dot inside prose
        "X = 'calc.'\n",
        "X = 'cli.py'\n",  # no root holds cli.py directly
        "X = 'elsewhere/calc/cli.py'\n",
        "X = 'src/calc/cli.pyc'\n",
    ],
)
def test_strings_that_name_no_project_module_add_no_edge_to_it(source: str) -> None:
    sources = {**CLI_PROJECT, "tests/test_x.py": source.encode()}
    graph = build(sources, ["", "src"], ["tests/test_x.py"])
    assert graph.reach("tests/test_x.py", CORE) == {}
    assert "src/calc/cli.py" not in graph.files_reached("tests/test_x.py")


def test_a_plain_string_that_is_a_top_level_name_imports_only_that_package() -> None:
    sources = {**CLI_PROJECT, "tests/test_x.py": b"LABEL = 'calc'\n"}
    graph = build(sources, ["", "src"], ["tests/test_x.py"])
    assert graph.files_reached("tests/test_x.py") == {"tests/test_x.py", "src/calc/__init__.py"}


def test_a_file_named_only_by_its_path_has_its_path_as_its_name() -> None:
    sources = {**CLI_PROJECT, "tests/test_tool.py": b"TOOL = 'scripts/my-tool.py'\n"}
    graph = build(sources, ["", "src"], ["tests/test_tool.py"])
    assert graph.module_names("scripts/my-tool.py") == ("scripts/my-tool.py",)
    changed = frozenset(graph.module_names("scripts/my-tool.py"))
    assert graph.reach("tests/test_tool.py", changed) == {
        "scripts/my-tool.py": ("tests/test_tool.py",)
    }
    assert module_names("scripts/my-tool.py", graph.roots) == ()


def test_a_text_file_of_doctests_imports_what_its_examples_import() -> None:
    usage = b"# Usage\n\n>>> from calc.core import (\n...     mean,\n... )\n>>> mean([1, 2])\n1.5\n"
    sources = {**CLI_PROJECT, "docs/usage.md": usage, "docs/other.md": b"no examples\n"}
    graph = build(sources, ["", "src"], ["docs/usage.md", "docs/other.md"])
    assert graph.reach("docs/usage.md", CORE) == {"calc.core": ("docs/usage.md",)}
    assert graph.reach("docs/other.md", CORE) == {}
    assert graph.unparsable == ()


@pytest.mark.parametrize(
    "text",
    [
        b">>> def f(:\n",  # an example that is not Python
        b"  >>> x = 1\n >>> y = 2\n... z\n",  # doctest's own parser refuses it
        b">>>x = 1\n",  # no blank after the prompt
    ],
)
def test_a_text_file_whose_examples_do_not_parse_imports_every_module(text: bytes) -> None:
    sources = {**CLI_PROJECT, "docs/bad.txt": text}
    graph = build(sources, ["", "src"], ["docs/bad.txt"])
    assert graph.unparsable == ("docs/bad.txt",)
    assert graph.reach("docs/bad.txt", CORE) == {"calc.core": ("docs/bad.txt",)}
