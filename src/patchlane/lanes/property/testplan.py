"""Which test files and ``@given`` tests the map's ``lanes.property.tests`` names, at base
and at head, found by reading the trees (``pytests.scan``), never by importing them.

The trust rule is the property modules' (docs/architecture.md §2): each test file runs from
the base's version and from the head's, both against the head's code, so a patch that edits
a test to pass still meets the base's version. The base's test files are written to a tree
of their own (``BASE_DIR`` inside the base tree: a name no import can spell), holding each
test's directory and the ``__init__.py`` files above it, and nothing else, so that the base
run imports the base's test and the head's code.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchlane.child import pytests
from patchlane.errors import MapError
from patchlane.project.config import PropertyLane

BASE_DIR = ".tests"
NOT_GIVEN = "not a @given test: only Hypothesis tests run as properties"
NO_GIVEN = "holds no @given test"
STATEFUL = (
    "a stateful Hypothesis test (a state machine's TestCase): the property lane does not "
    "run state machines"
)


@dataclass(frozen=True)
class TestVersion:
    """One version (base or head) of a test file: where it is, how it is imported, and
    the node ids of the ``@given`` tests to run (``error``: why it cannot be read)."""

    path: str  # repository path
    source: str  # base | head
    tree: Path  # the root of the tree it is in
    file: Path  # its real path there
    import_dir: str  # repository path of the directory put first on ``sys.path``
    module: str  # its dotted import name
    names: tuple[str, ...]
    error: str | None
    error_line: int | None = None  # the line of ``error``, when known


@dataclass(frozen=True)
class TestPlan:
    """The versions to run (in map order, base before head), the test files in map order,
    and what is not run, with why: ``(node id or entry, reason)``."""

    versions: tuple[TestVersion, ...]
    files: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]


def base_paths(lane: PropertyLane) -> tuple[str, ...]:
    """The repository paths to write into the base's tests tree for ``lane.tests``: each
    test's directory (its helpers come along) and each ``__init__.py`` above it."""
    out: dict[str, None] = {}
    for entry in lane.tests:
        path = entry.partition(pytests.SEPARATOR)[0].rstrip("/")
        parts = path.split("/")
        if path.endswith(".py"):
            parts = parts[:-1]
        out.setdefault("/".join(parts) + "/" if parts else path)
        for depth in range(1, len(parts)):
            out.setdefault("/".join(parts[:depth]) + "/__init__.py")
    return tuple(out)


def plan(
    lane: PropertyLane, trees: Mapping[str, Path], label: str, only: str | None = None
) -> TestPlan:
    """Find the tests ``lane.tests`` names in ``trees`` (``base``/``head`` -> root).

    Raises ``MapError`` (the map's file and the line of ``tests``) for an entry found in
    no tree, and for a node id whose test is in no version of its file."""
    files: dict[str, set[str] | None] = {}  # path -> named tails (None: every test)
    for entry in lane.tests:
        path, _, tail = entry.partition(pytests.SEPARATOR)
        found = {f for tree in trees.values() for f in _expand(tree, path, bool(tail))}
        if not found:
            raise _error(lane, label, f"no such test file or directory {path!r} at base or head")
        for file in sorted(found):
            current = files.get(file, set())
            if not tail:
                files[file] = None
            elif current is not None:
                files[file] = current | {tail}
    versions: list[TestVersion] = []
    skipped: dict[tuple[str, str], None] = {}
    seen: dict[str, set[str]] = {}  # path -> every test any version defines
    for path, wanted in files.items():
        for source, tree in trees.items():
            version = _version(path, source, tree, wanted, seen, skipped)
            if version is not None:
                versions.append(version)
    for entry in lane.tests:
        path, _, tail = entry.partition(pytests.SEPARATOR)
        if tail and tail not in seen.get(path, set()):
            raise _error(lane, label, f"no test {tail!r} in {path} at base or head")
    for path in files:
        named = [v for v in versions if v.path == path]
        if named and not any(v.names for v in named) and all(v.error is None for v in named):
            skipped.setdefault((path, NO_GIVEN))
    if only is not None:
        versions = [_only(v, only) for v in versions]
    return TestPlan(tuple(versions), tuple(files), tuple(skipped))


def _only(version: TestVersion, only: str) -> TestVersion:
    names = tuple(n for n in version.names if n == only)
    return TestVersion(
        version.path,
        version.source,
        version.tree,
        version.file,
        version.import_dir,
        version.module,
        names,
        version.error,
        version.error_line,
    )


def _error(lane: PropertyLane, label: str, message: str) -> MapError:
    return MapError(label, f"lanes.property.tests: {message}", lane.tests_line)


def _expand(tree: Path, path: str, node: bool) -> list[str]:
    """The test files ``path`` names in ``tree`` (repository paths): the file itself, or
    a directory's ``test_*.py``/``*_test.py`` files below it (sorted)."""
    where = tree.joinpath(*path.rstrip("/").split("/"))
    if where.is_file() and (node or path.endswith(".py")):
        return [path]
    if node or not where.is_dir():
        return []
    out = []
    for dirpath, dirnames, filenames in os.walk(where):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for name in sorted(filenames):
            if pytests.is_test_file(name):
                out.append(Path(dirpath, name).relative_to(tree).as_posix())
    return out


def _version(
    path: str,
    source: str,
    tree: Path,
    wanted: set[str] | None,
    seen: dict[str, set[str]],
    skipped: dict[tuple[str, str], None],
) -> TestVersion | None:
    file = tree.joinpath(*path.split("/"))
    if not file.is_file():
        return None
    real = Path(os.path.realpath(file))
    import_dir, module = pytests.import_place(tree, path)
    try:
        text = real.read_bytes().decode("utf-8")
        scan = pytests.scan(text, path)
    except (OSError, UnicodeDecodeError) as e:
        error = f"{path}: cannot read: {e}"
        return TestVersion(path, source, tree, real, import_dir, module, (), error)
    except SyntaxError as e:
        where = f"{path}:{e.lineno}" if e.lineno else path
        error = f"{where}: {e.msg}"
        return TestVersion(path, source, tree, real, import_dir, module, (), error, e.lineno)
    seen.setdefault(path, set()).update((*scan.given, *scan.others, *scan.stateful))
    given = [t for t in scan.given if wanted is None or t in wanted]
    for tail in scan.stateful:
        if wanted is None or tail in wanted:
            skipped.setdefault((f"{path}{pytests.SEPARATOR}{tail}", STATEFUL))
    for tail in scan.others:
        if wanted is None or tail in wanted:
            skipped.setdefault((f"{path}{pytests.SEPARATOR}{tail}", NOT_GIVEN))
    names = tuple(f"{path}{pytests.SEPARATOR}{t}" for t in given)
    return TestVersion(path, source, tree, real, import_dir, module, names, None)


def skipped_line(skipped: Sequence[tuple[str, str]], shown: int = 10) -> str | None:
    """Return the one terminal line that lists what ``lanes.property.tests`` names but the
    lane does not run (``TestPlan.skipped``), stateful tests first, each by its node id
    (the first ``shown``, then how many more), or ``None`` when nothing is skipped."""
    if not skipped:
        return None
    stateful = [t for t, why in skipped if why == STATEFUL]
    others = [t for t, why in skipped if why != STATEFUL]
    parts = [f"{t} (stateful)" for t in stateful] + others
    listed = ", ".join(parts[:shown])
    if len(parts) > shown:
        listed += f" and {len(parts) - shown} more"
    kinds = f"{len(stateful)} stateful; " if stateful else ""
    return (
        f"property: {len(parts)} test(s) that lanes.property.tests names are not run as "
        f"properties ({kinds}the report's skipped_tests says why): {listed}"
    )


def child_paths(version: TestVersion, head_roots: Sequence[Path]) -> list[str]:
    """The child's ``sys.path`` for ``version``: its import directory first (pytest's
    ``prepend`` mode), then the head's import roots (the code under test is the head's)."""
    first = (
        version.tree.joinpath(*version.import_dir.split("/"))
        if version.import_dir
        else (version.tree)
    )
    return list(dict.fromkeys([os.fspath(first), *(os.fspath(p) for p in head_roots)]))
