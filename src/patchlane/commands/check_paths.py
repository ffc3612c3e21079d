"""``patchlane check``: every path the review map names must name something.

A map path that names nothing covers nothing: a lane's ``paths`` that match no file make
every patch to the real code "map incomplete", a ``replay.tests`` root that is not there
collects no test, and an ``ignore`` entry for a file that is not there hides a typo. Worst
is a placeholder (``PACKAGE/``, from an older ``init``'s example) left in place: it looks
like a map and judges nothing. So ``check`` reads the paths of the map, each with its line,
and refuses (bad input, exit 2) any that is a placeholder or that names no file or folder
in what it checks (the work tree, or the commit of ``--rev``): ``lanes.property.paths``,
``tests`` (the file of a node id) and ``pythonpath``; the fixture lane's paths;
``lanes.replay.tests``, ``paths`` and ``private``; each ``ignore`` entry's path. A path
ending in ``/`` must name a folder. The freeze registry and the locks are checked as files
already.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from patchlane.errors import PatchlaneError
from patchlane.gate.validate import INPUT, Problem
from patchlane.inputs.paths import symlink_on_way, to_fs
from patchlane.inputs.yamlio import YamlList, YamlMap, load_yaml
from patchlane.project.harness import snapshot

# The example names an ``init`` once wrote in its comments (``PACKAGE/``,
# ``tests/fixtures/NAME/``): a path with such a part names the user's code only by accident.
PLACEHOLDERS = frozenset({"PACKAGE", "NAME"})
# (where in the map, key) of each list of paths, by dotted place.
_LISTS = (
    (("lanes", "property"), "paths"),
    (("lanes", "property"), "tests"),
    (("lanes", "property"), "pythonpath"),
    (("lanes", "fixture"), "paths"),
    (("lanes", "replay"), "tests"),
    (("lanes", "replay"), "paths"),
    (("lanes", "replay"), "private"),
)


def _at(doc: object, keys: tuple[str, ...]) -> YamlMap | None:
    for key in keys:
        if not isinstance(doc, YamlMap):
            return None
        doc = doc.get(key)
    return doc if isinstance(doc, YamlMap) else None


def map_paths(text: str, label: str) -> Iterator[tuple[str, int | None, str]]:
    """Yield ``(field, line, path)`` for each path the map ``text`` names (a node id's
    file for ``lanes.property.tests``). The map has parsed already: nothing here raises
    for its shape."""
    doc = load_yaml(text, label)
    for place, key in _LISTS:
        section = _at(doc, place)
        values = section.get(key) if section is not None else None
        if isinstance(values, YamlList):
            field = ".".join((*place, key))
            for value, line in zip(values, values.item_lines, strict=False):
                if isinstance(value, str):
                    yield field, line, value.partition("::")[0]
    fixture = _at(doc, ("lanes", "fixture"))
    roots = fixture.get("roots") if fixture is not None else None
    if isinstance(roots, YamlList):
        for root in roots:
            if isinstance(root, YamlMap) and isinstance(root.get("path"), str):
                at = root.key_lines.get("path")
                yield "lanes.fixture.roots.path", at, str(root["path"])
    ignore = doc.get("ignore") if isinstance(doc, YamlMap) else None
    if isinstance(ignore, YamlList):
        for entry in ignore:
            if isinstance(entry, YamlMap) and isinstance(entry.get("path"), str):
                yield "ignore.path", entry.key_lines.get("path"), str(entry["path"])


def _in_worktree(repo: Path, path: str) -> str:
    """``dir``, ``link`` (a link on its way), ``file`` (anything else that is there) or
    ``""`` for ``path`` in the work tree; no link is followed."""
    rel = path.rstrip("/")
    if not rel:
        return "dir"
    if symlink_on_way(repo, rel) is not None:
        return "link"  # there, as a link (never followed): the lanes refuse it themselves
    try:
        mode = os.lstat(to_fs(repo, rel)).st_mode
    except OSError:
        return ""
    return "dir" if stat.S_ISDIR(mode) else "file"


def _commit_kinds(repo: Path, commit: str) -> dict[str, str]:
    """Every path in ``commit``, files and the folders above them."""

    kinds: dict[str, str] = {}
    for path in snapshot(repo, commit).files:
        kinds[path] = "file"
        parts = path.split("/")
        for depth in range(1, len(parts)):
            kinds["/".join(parts[:depth])] = "dir"
    return kinds


def path_problems(repo: Path, label: str, text: str, commit: str | None) -> list[Problem]:
    """Return one bad-input problem for each map path that is a placeholder or names
    nothing in the work tree (``commit`` ``None``) or in ``commit``. Raises ``GitError``
    when the commit cannot be read."""
    kinds = _commit_kinds(repo, commit) if commit is not None else None
    where = "in the work tree" if commit is None else f"in commit {commit[:12]}"
    out: list[Problem] = []
    for field, line, path in map_paths(text, label):
        parts = path.rstrip("/").split("/")
        placeholder = [p for p in parts if p in PLACEHOLDERS]
        if placeholder:
            why = f"{field}: {path!r} is a placeholder ({placeholder[0]}): name the real path"
            out.append(Problem(label, line, why, INPUT))
            continue
        if kinds is not None:
            kind = kinds.get(path.rstrip("/"), "dir" if not path.rstrip("/") else "")
        else:
            kind = _in_worktree(repo, path)
        if not kind:
            why = f"{field}: {path!r} names nothing {where}"
            out.append(Problem(label, line, why, INPUT))
        elif path.endswith("/") and kind == "file":
            why = f"{field}: {path!r} ends in '/' but is a file {where}"
            out.append(Problem(label, line, why, INPUT))
    return out


def checked_paths(
    repo: Path, label: str, text: str, commit: str | None
) -> tuple[list[Problem], str | None]:
    """``path_problems``, or no problem and a note when the commit cannot be read."""
    try:
        return path_problems(repo, label, text, commit), None
    except PatchlaneError as e:
        return [], f"map paths not checked: {e}"
