"""The static rules of slice selection: why a test file's tests are in the slice.

Each rule reads the materialised head (its Python sources, the changed paths, the review
map) and the static import graph, and gives reasons: a changed test file, a changed
conftest or test-package ``__init__.py``, an import of a changed module, a test that starts
processes, a file that names (or may read) a changed data or source file, a changed file
that changes state every later test shares (docs/architecture.md §4;
docs/explanation/decisions/0011-selection-widens.md). ``select`` applies them, with the
dependency map where it decides.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol

from patchlane.inputs.paths import under, under_any
from patchlane.project import importgraph
from patchlane.project.config import ReviewMap
from patchlane.project.sourcescan import scan_source
from patchlane.project.testmodules import CONFTEST, conftests

# The rules that select a test, as the report counts them (``Selection.rule_counts``); the
# dependency map's own are in ``mapselect``.
CHANGED_TEST = "changed test file"
HARNESS_CHANGED = "its conftest changed"
IMPORTS = "static import graph"
PROCESSES = "starts processes"
NAMES = "names a changed file"
FAILURE_LOG = "failure log"
WHOLE_SUITE = "--all"
NOT_COLLECTED = "does not collect at head"
BROKEN_BY_PATCH = "does not collect at head, collects at the base"
SHARED_STATE = "a changed file changes state every test shares"
READS_SOURCE = "may read a changed source file"


# A run of text between quotes or line ends: what a string literal of an unparsable
# source could hold (and some code besides, which only adds names).
_QUOTED = re.compile(r"[^'\"\n]+")


def named_basenames(data: bytes) -> frozenset[str]:
    """Return the last ``/`` part of every string constant in a Python source (f-string
    parts included): what a file could name as a data file.

    A source patchlane cannot parse (``untrusted.parse_python``: syntax, NUL bytes,
    nesting, size) gets the last ``/`` part of every run of text between quotes or line
    ends instead: a superset of its literals' (escape sequences aside), so that a file the
    host's interpreter might still run is not taken to name nothing. Never raises.
    """
    found = scan_source(data, "<source>")  # the import graph has usually scanned it already
    if found is None:
        text = data.decode("utf-8", "surrogateescape")
        return frozenset(m.group().rsplit("/", 1)[-1] for m in _QUOTED.finditer(text))
    return frozenset(s.rsplit("/", 1)[-1] for s in found.strings)


def names_file(basenames: frozenset[str], path: str) -> bool:
    """Return whether a source with ``basenames`` (see ``named_basenames``) names ``path``:
    a literal that is the path, its basename, or ends in ``/`` + basename. (Each of these
    ends in the basename, so one set lookup decides, however many data files there are.)"""
    return path.rsplit("/", 1)[-1] in basenames


class Tree(Protocol):
    """What the rules read of a selection: the materialised head and what changed."""

    root: Path
    map: ReviewMap
    changed: frozenset[str]
    sources: dict[str, bytes]


class StaticRules:
    """The static rules' view of one selection: what changed, by kind (rules 1-3)."""

    def __init__(self, selector: Tree, graph: importgraph.ImportGraph) -> None:
        self.selector = selector
        self.graph = graph
        self.tests = selector.map.replay.tests
        self.changed_modules: dict[str, str] = {}  # module name -> changed file
        for path in sorted(selector.changed):
            for name in graph.module_names(path):
                self.changed_modules.setdefault(name, path)
        self.changed_names = frozenset(self.changed_modules)
        fixture_paths = selector.map.fixture.paths if selector.map.fixture else ()
        self.changed_fixtures = sorted(p for p in selector.changed if under_any(p, fixture_paths))
        # A changed data file (not Python, not a fixture) is reached by the tests whose
        # own source or imported project modules name it: code that reads "rates.json", a
        # test parametrized over "cases.json" beside it.
        self.data = sorted(
            p
            for p in selector.changed
            if not p.endswith(".py")
            and p not in self.changed_fixtures
            and (selector.root / p).is_file()
        )
        self.named_by: dict[str, frozenset[str]] = {}
        # Changed Python files under the test roots, by basename: a test module pytest
        # imports by its bare name (no package) clashes with another of the same name.
        self.changed_test_modules: dict[str, list[str]] = {}
        self.changed_inits: frozenset[str] = frozenset()
        inits = set()
        for p in sorted(selector.changed):
            name = p.rsplit("/", 1)[-1]
            if p.endswith(".py") and under_any(p, self.tests) and name != CONFTEST:
                if name == "__init__.py":
                    inits.add(p)
                else:
                    self.changed_test_modules.setdefault(name, []).append(p)
        self.changed_inits = frozenset(inits)
        # Changed code a test may read as text (a lint test globbing src/**/*.py): a test
        # module naming its file or a folder above it selects its tests.
        self.code_read = sorted(
            p
            for p in selector.changed
            if p.endswith(".py") and not under_any(p, self.tests) and p in selector.sources
        )
        # One under the test roots that no source names at all (read through a glob, a
        # directory listing): every test under its root may read it.
        self.unnamed_test_data = self._unnamed([p for p in self.data if under_any(p, self.tests)])

    def _unnamed(self, paths: list[str]) -> dict[str, str]:
        """``paths`` that no Python source of the tree names -> their test root."""
        if not paths:
            return {}
        sources = self.selector.sources
        named = frozenset().union(*(named_basenames(data) for data in sources.values()))
        return {
            p: next(t for t in self.tests if under(p, t)) for p in paths if not names_file(named, p)
        }

    def whys(self, test_file: str) -> list[tuple[str, str, str | None]]:
        """Why ``test_file``'s tests are in the slice: (reason, rule, the changed path it is
        about, ``None`` when the dependency map never decides it)."""
        starts = [test_file, *conftests(test_file, self.selector.sources)]
        whys = self._changed_file_whys(test_file)
        whys.extend(self._test_package_whys(test_file))
        harness, reached = self._import_whys(test_file, starts)
        whys.extend(harness)
        whys.extend(self._process_whys(starts, reached))
        named = named_basenames(self.selector.sources.get(test_file, b""))
        whys.extend(
            (f"names changed fixture {p}", NAMES, p)
            for p in self.changed_fixtures
            if names_file(named, p)
        )
        if self.data:
            whys.extend(self._data_named(test_file))
        whys.extend(self._source_read_whys(test_file, named))
        for p, root in self.unnamed_test_data.items():
            if under(test_file, root):
                why = f"no source names changed file {p}, under {root}: any test there may read it"
                whys.append((why, NAMES, p))
        return whys

    def _changed_file_whys(self, test_file: str) -> list[tuple[str, str, str | None]]:
        """``test_file`` itself changed: a test module under the test roots, a doctest file,
        or a module whose doctests run (which the dependency map never decides)."""
        if test_file not in self.selector.changed:
            return []
        if under_any(test_file, self.tests):
            return [("in a changed test file", CHANGED_TEST, test_file)]
        if not test_file.endswith(".py"):
            return [("a changed doctest file", CHANGED_TEST, test_file)]
        return [("a doctest of a changed module", CHANGED_TEST, None)]

    def _import_whys(
        self, test_file: str, starts: list[str]
    ) -> tuple[list[tuple[str, str, str | None]], frozenset[str]]:
        """A changed conftest of ``test_file`` (among ``starts``: it and its conftests), and
        each changed module one of ``starts`` imports (by the shortest chain); with the
        changed modules reached."""
        whys: list[tuple[str, str, str | None]] = []
        reached: dict[str, tuple[str, ...]] = {}
        for start in starts:
            if start != test_file and start in self.selector.changed:
                whys.append((f"its {start} changed", HARNESS_CHANGED, start))
            for name, found in self.graph.reach(start, self.changed_names).items():
                # A conftest reaches on its test file's behalf: the chain says so.
                chain = found if start == test_file else (test_file, *found)
                path = self.changed_modules[name]
                if path not in reached or len(chain) < len(reached[path]):
                    reached[path] = chain
        for path, chain in sorted(reached.items()):
            via = f" via {' -> '.join(chain)}" if len(chain) > 1 else ""
            whys.append((f"imports changed module {path}{via}", IMPORTS, path))
        return whys, frozenset(reached)

    def _process_whys(
        self, starts: list[str], reached: frozenset[str]
    ) -> list[tuple[str, str, str | None]]:
        """The first of ``starts`` that starts processes may run any changed module of the
        code under test it does not import (those ``reached`` already have their reason)."""
        starter = next((s for s in starts if s in self.graph.starts_processes), None)
        if starter is None:
            return []
        code = {p for p in self.changed_modules.values() if not under_any(p, self.tests)}
        return [
            (f"starts processes ({starter}), which may run changed module {path}", PROCESSES, path)
            for path in sorted(code - reached)
        ]

    def _source_read_whys(
        self, test_file: str, named: frozenset[str]
    ) -> list[tuple[str, str, str | None]]:
        """The changed source files ``test_file`` (its literals' last parts ``named``) may
        read as text: it names one, or a folder above it."""
        return [
            (
                f"names changed source file {p} or a folder above it (it may read it)",
                READS_SOURCE,
                p,
            )
            for p in self.code_read
            if p != test_file and _may_read(test_file, named, p, beside=False)
        ]

    def _test_package_whys(self, test_file: str) -> list[tuple[str, str, str | None]]:
        """A changed ``__init__.py`` of a directory above ``test_file`` (pytest imports its
        package before the module), and a changed test module of the same file name (pytest
        imports both by that bare name, and the second one collected does not collect)."""
        whys: list[tuple[str, str, str | None]] = []
        parts = test_file.split("/")
        for depth in range(len(parts) - 1, 0, -1):
            init = "/".join([*parts[:depth], "__init__.py"])
            if init in self.changed_inits and init != test_file:
                whys.append((f"its package's {init} changed", HARNESS_CHANGED, init))
        for other in self.changed_test_modules.get(parts[-1], ()):
            if other != test_file:
                why = f"shares its module name with changed test file {other}"
                whys.append((why, CHANGED_TEST, other))
        return whys

    def _data_named(self, test_file: str) -> list[tuple[str, str, str | None]]:
        """The changed data files a module that ``test_file`` imports names."""
        sources = self.selector.sources
        modules = sorted(
            f
            for start in [test_file, *conftests(test_file, sources)]
            for f in self.graph.files_reached(start)
        )
        for module in modules:
            if module not in self.named_by:
                self.named_by[module] = named_basenames(sources.get(module, b""))
        whys: list[tuple[str, str, str | None]] = []
        for p in self.data:
            naming = next(
                (
                    m
                    for m in modules
                    # Package code reads its data beside it; a test module names what it reads.
                    if _may_read(m, self.named_by[m], p, beside=not under_any(m, self.tests))
                ),
                None,
            )
            if naming is not None:
                whys.append((f"imports {naming}, which may read changed file {p}", NAMES, p))
        return whys


def _may_read(module: str, named: frozenset[str], data: str, *, beside: bool) -> bool:
    """Whether ``module`` (its string literals' last parts ``named``) may read the data file
    ``data``: it names the file, or a directory above it (a glob over ``cases/``), or (with
    ``beside``) it lives in that file's directory or one above it, as package code reading
    its data through ``__file__`` or ``importlib.resources`` does. A name alone is one
    reader, never the only one: code that lists a directory names no file in it."""
    if names_file(named, data):
        return True
    folders = data.split("/")[:-1]
    if any(folder in named for folder in folders):
        return True
    home = module.rsplit("/", 1)[0] if "/" in module else ""
    return beside and bool(home) and data.startswith(home + "/")
