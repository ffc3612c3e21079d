"""Head entries the gate cannot replay are review events (docs/architecture.md §1 rule 6, §4).

``tree.materialise`` skips what it cannot write safely: a symlink that leaves the tree,
loops or dangles, a gitlink (submodule), a path with a backslash. It writes files whose
names no slice line or node id can carry (``::`` is pytest's separator; a line break or
another unprintable character; bytes that are not UTF-8). The project's own checkout has
both kinds and pytest collects them there (a syntax error, a failing test); the gate never
replays them, so a slice that passes says nothing about them.

Each such entry that pytest may collect or a lane covers is a review event: a ``.py``
file or a text doctest (``--doctest-glob``, pytest's default ``test*.txt``) anywhere, any
path under the replay's test roots or a lane's paths, or an entry that is an ancestor of
one (a gitlink or link where a test root should be); a directory whose name is refused
counts when it holds such a path. A path holding ``::`` is an event wherever it is: node
ids are split into file and test at the first ``::`` (``select.file_of``,
``run.file_part``), so only because every such path stops the verdict can that split
never give a test to the wrong file. Committed bytecode stays a note: changed, it is
already a blocking control file (``bytecode``). Everything else stays a note: pytest
would not collect it, and no lane reads it.
"""

from __future__ import annotations

import configparser
import fnmatch
import os
import shlex
from collections.abc import Callable, Iterable
from pathlib import Path

from patchlane.formats import slicefile
from patchlane.infra.bytecode import NEVER_MATERIALISED
from patchlane.infra.ui import show
from patchlane.inputs import untrusted
from patchlane.inputs.paths import under, under_any
from patchlane.project.config import ReviewMap

NODE_SEPARATOR = "::"
DOCTEST_GLOB = "--doctest-glob"
DEFAULT_DOCTEST_GLOB = "test*.txt"
# Configuration files at the tree root -> the section holding pytest's options.
_INI_FILES = {
    "pytest.ini": "pytest",
    ".pytest.ini": "pytest",
    "tox.ini": "pytest",
    "setup.cfg": "tool:pytest",
}
_NOT_REPLAYED = "the real checkout has it and pytest may collect it; the gate could not replay it"
# A written file whose path holds ``::`` may even be replayed, but its node ids read as
# another file's: nothing the gate concludes about it can be trusted.
_NOT_ATTRIBUTED = (
    "the real checkout has it and pytest may collect it; the gate cannot tell its tests "
    "from another file's, so its replay is no evidence"
)


def covered_roots(review_map: ReviewMap) -> tuple[str, ...]:
    """Return the paths pytest collects or a lane covers, as the base's map names them:
    the replay's test roots, the property lane's paths, import roots and tests, the fixture
    roots and the freeze registry."""
    roots = list(review_map.replay.tests)
    if review_map.property is not None:
        lane = review_map.property
        roots += [*lane.paths, *lane.pythonpath]
        roots += [t.split(NODE_SEPARATOR, 1)[0] for t in lane.tests]
    if review_map.fixture is not None:
        roots += [*review_map.fixture.paths, *review_map.fixture.locks]
    if review_map.freeze is not None:
        roots.append(review_map.freeze.registry)
    return tuple(dict.fromkeys(r for r in roots if r))


def doctest_globs(root: Path) -> tuple[str, ...]:
    """Return the file patterns pytest collects as text doctests in the tree at ``root``
    (``doctest_globs_of`` its configuration files, never read through a link)."""
    return doctest_globs_of(lambda name: _regular_bytes(root / name))


def doctest_globs_of(read: Callable[[str], bytes | None]) -> tuple[str, ...]:
    """Return the file patterns pytest collects as text doctests: its default ``test*.txt``
    and every ``--doctest-glob`` in the ``addopts`` of any pytest configuration file at the
    root (whichever pytest would pick: more, never fewer). ``read`` gives the bytes of a
    root file by name, or ``None`` when it is not a regular file. A file that cannot be
    parsed adds nothing (classify judges the harness)."""
    words: list[str] = []
    for name, section in _INI_FILES.items():
        data = read(name)
        if data is not None:
            words += _split(_ini_addopts(data, section))
    data = read("pyproject.toml")
    if data is not None:
        words += _split(_toml_addopts(data))
    globs = [DEFAULT_DOCTEST_GLOB]
    for i, word in enumerate(words):
        if word == DOCTEST_GLOB and i + 1 < len(words):
            globs.append(words[i + 1])
        elif word.startswith(DOCTEST_GLOB + "="):
            globs.append(word.split("=", 1)[1])
    return tuple(dict.fromkeys(globs))


def doctest_glob_of(path: str, globs: tuple[str, ...]) -> str | None:
    """Return the first of ``globs`` under which pytest collects ``path`` as a text doctest
    (a glob with a ``/`` matches the path, one without the basename), or ``None``."""
    name = path.rsplit("/", 1)[-1]
    return next((g for g in globs if fnmatch.fnmatchcase(path if "/" in g else name, g)), None)


def collected_or_covered(
    path: str, roots: tuple[str, ...], globs: tuple[str, ...] = (DEFAULT_DOCTEST_GLOB,)
) -> bool:
    """Whether ``path`` is a Python file or a text doctest (a name one of ``globs``
    matches), lies under one of ``roots`` or holds one of them (a submodule or a link in a
    test root's place)."""
    if path.endswith(".py") or doctest_glob_of(path, globs) is not None:
        return True
    return under_any(path, roots) or any(under(r.rstrip("/"), path) for r in roots)


def name_problem(path: str) -> str | None:
    """Return why no node id can carry a file at ``path`` (its id would be split at the
    wrong place, or could not be one line of a slice), or ``None``."""
    if NODE_SEPARATOR in path:
        return "'::' in the path, pytest's node-id separator"
    return slicefile.nodeid_problem(path)


def review_events(
    skipped: Iterable[tuple[str, str]], root: Path, review_map: ReviewMap
) -> tuple[list[str], list[str]]:
    """Sort what cannot be replayed at the head into review events and notes.

    ``skipped`` is ``Materialised.skipped`` (``(path, why)``) and ``root`` the tree it was
    materialised into. Returns ``(events, notes)``: one event per skipped entry and per
    written entry whose name no node id can carry (a directory stands for what it holds)
    that pytest may collect or a lane covers (``collected_or_covered``), or whose path
    holds ``::`` (wherever it is); a note for every other skipped entry, bytecode included.
    """
    roots = covered_roots(review_map)
    globs = doctest_globs(root)
    events: list[str] = []
    notes: list[str] = []
    for path, why in sorted(skipped):
        if why != NEVER_MATERIALISED and (
            NODE_SEPARATOR in path or collected_or_covered(path, roots, globs)
        ):
            why = why.removesuffix(" (not materialised)")  # said already
            events.append(f"{show(path)} is not materialised ({why}): {_NOT_REPLAYED}")
        else:
            notes.append(f"not materialised: {show(path)} ({why})")
    for entry, held in sorted(_badly_named(root).items()):
        # Far from every collected path (a stray ``Icon\r`` in the docs) a name is harmless:
        # only ``::`` is an event anywhere, since node ids are split at it.
        if NODE_SEPARATOR in entry or any(collected_or_covered(p, roots, globs) for p in held):
            slice_problem = slicefile.nodeid_problem(entry)
            problem = name_problem(entry)
            events.append(
                f"{show(entry)} has a name the slice and node-id format cannot carry "
                f"({problem}): {_NOT_REPLAYED if slice_problem else _NOT_ATTRIBUTED}"
            )
    return events, notes


def _badly_named(root: Path) -> dict[str, list[str]]:
    """Return each entry below ``root`` (a repository path: a file, a link, or the topmost
    directory) whose name no node id can carry, with the paths it stands for (itself, or
    every file and link below the directory). Links are never followed."""
    found: dict[str, list[str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        prefix = "" if rel_dir == "." else f"{rel_dir}/"
        links = [d for d in dirnames if (Path(dirpath) / d).is_symlink()]
        for name in [*filenames, *links]:
            path = prefix + name
            if name_problem(path) is not None:
                found.setdefault(_topmost_bad(path), []).append(path)
    return found


def _topmost_bad(path: str) -> str:
    """The shortest leading part of ``path`` (whole components) whose name is refused."""
    parts = path.split("/")
    heads = ("/".join(parts[:end]) for end in range(1, len(parts) + 1))
    return next((head for head in heads if name_problem(head) is not None), path)


def _regular_bytes(path: Path) -> bytes | None:
    """The bytes of a regular file (never through a link), or ``None``."""
    if path.is_symlink() or not path.is_file():
        return None
    return path.read_bytes()


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _ini_addopts(data: bytes, section: str) -> str:
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(data.decode("utf-8"))
        return parser.get(section, "addopts", fallback="")
    except (UnicodeError, configparser.Error, RecursionError, MemoryError, ValueError):
        return ""


def _toml_addopts(data: bytes) -> str:
    try:
        doc = untrusted.load_toml(data)
    except untrusted.Unreadable:
        return ""
    tool = doc.get("tool")
    pytest = tool.get("pytest") if isinstance(tool, dict) else None
    options = pytest.get("ini_options") if isinstance(pytest, dict) else None
    value = options.get("addopts") if isinstance(options, dict) else None
    if isinstance(value, list):
        return " ".join(shlex.quote(v) for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""
