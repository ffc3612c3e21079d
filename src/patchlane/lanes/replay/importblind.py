"""The tests a process started at import blinds (docs/architecture.md §4, "Blind at import").

The recorder notes, for a start outside every test that may run the project's code, the
module of the tree whose body was running (``blind_at_import``). What that process did was
not traced, and what the module made of it (a value, a file, a server) reaches the tests
that imported the module: those whose test file (or a conftest of it) imports it in the
static graph (``importgraph``, over-approximating on purpose), those that imported it (or
a module below it) while they ran, and the module's own tests when it is a test file. A
conftest is every test's (pytest loads it for the session), and so is a start no module
can be found for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchlane.project import importgraph
from patchlane.project.testmodules import CONFTEST, conftests

EVERY = ""  # the recording's context outside every test: the key for "every test"


def resolve(
    recording: Mapping[str, Any], tree: Path, roots: Iterable[str], tests: Iterable[str]
) -> dict[str, str]:
    """Return the recording's blind contexts (context -> why) with the starts at import
    resolved: each blinds every test that imported its module (see the module docstring),
    or every test (the key ``EVERY``). ``tree`` is the base as it ran, ``roots`` its import
    roots, ``tests`` the collected node ids. Raises ``OSError`` when the tree cannot be
    read."""
    blind = dict(recording.get("blind", {}))
    starts = [s for s in recording.get("blind_at_import", []) if isinstance(s, Mapping)]
    if not starts or EVERY in blind:
        return blind
    by_file: dict[str, list[str]] = {}
    for nodeid in tests:
        by_file.setdefault(nodeid.split("::", 1)[0], []).append(nodeid)
    sources = importgraph.python_sources(tree)
    graph = importgraph.build(sources, roots, by_file)
    imported = recording.get("imported", {})
    for start in starts:
        why = str(start.get("why", ""))
        modules = [m for m in start.get("modules", []) if isinstance(m, Mapping)]
        pairs = [(str(m.get("module", "")), str(m.get("file", ""))) for m in modules]
        shown = ", ".join(name or file for name, file in pairs) or "a module"
        reason = f"{why} (while {shown} was imported)"
        if not pairs or any(not n or not f or f.rsplit("/", 1)[-1] == CONFTEST for n, f in pairs):
            blind.setdefault(EVERY, reason)
            return blind
        suite = _Suite(graph, sources, by_file, imported)
        for module, file in pairs:
            _blind_importers(blind, (module, file), reason, suite)
    return blind


@dataclass(frozen=True)
class _Suite:
    """The base's suite as the recording saw it: its static import graph, its Python
    sources, its node ids by test file, and the modules each test imported."""

    graph: importgraph.ImportGraph
    sources: dict[str, bytes]
    by_file: dict[str, list[str]]
    imported: Mapping[str, list[str]]


def _blind_importers(
    blind: dict[str, str], started: tuple[str, str], reason: str, suite: _Suite
) -> None:
    """Blind, for ``reason``, every test that imported the module ``started`` names (its
    name, its file)."""
    module, file = started
    graph, sources, by_file, imported = suite.graph, suite.sources, suite.by_file, suite.imported
    names = frozenset(graph.module_names(file)) | {module}
    for test_file, ids in by_file.items():
        starts_from = [test_file, *conftests(test_file, sources)]
        if test_file == file or any(graph.reach(s, names) for s in starts_from):
            for nodeid in ids:
                blind.setdefault(nodeid, reason)
    for name, contexts in imported.items():
        if any(name == n or name.startswith(n + ".") for n in names):
            for context in contexts:
                if context != EVERY:
                    blind.setdefault(context, reason)
