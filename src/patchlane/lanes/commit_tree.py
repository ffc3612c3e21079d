"""The fixture bytes of a commit: ``git ls-tree`` and one ``git cat-file --batch``.

Nothing here touches the work tree: the gate's verdict is about the head commit.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from patchlane import git
from patchlane.config import FixtureRoot
from patchlane.lanes.hashing import (
    SYMLINK_PROBLEM,
    NotCanonical,
    canonical_problem,
    content_digest,
)
from patchlane.lanes.observe import FlavourRule, Observed, outermost
from patchlane.lock import covers
from patchlane.paths import under, under_any

GITLINK_PROBLEM = "submodule (gitlink): its bytes are not in this repository"


def ancestors(path: str) -> list[str]:
    """Return ``a``, ``a/b``, ... ``a/b/c`` for the repository path ``a/b/c`` (or ``a/b/c/``)."""
    parts = path.rstrip("/").split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def links_on_way(repo: Path, commit: str, paths: Iterable[str]) -> dict[str, str]:
    """Return ``{path: problem}`` for every symlink or submodule entry of ``commit`` at one
    of ``paths`` or their ancestors (one non-recursive ``git ls-tree``)."""
    wanted = sorted({a for p in paths for a in ancestors(p)})
    if not wanted:
        return {}
    raw = git.out(repo, "ls-tree", "-z", "--full-tree", commit, "--", *wanted)
    found: dict[str, str] = {}
    for record in raw.split(b"\0"):
        meta, _, name = record.partition(b"\t")
        if not record:
            continue
        mode = meta.split(b" ", 1)[0].decode("ascii")
        path = os.fsdecode(name)
        if path not in wanted:
            continue
        if mode == git.MODE_SYMLINK:
            found[path] = SYMLINK_PROBLEM
        elif mode == git.MODE_GITLINK:
            found[path] = GITLINK_PROBLEM
    return found


def observe_commit(
    repo: Path,
    commit: str,
    roots: tuple[FixtureRoot, ...],
    locks: frozenset[str],
    on_way: dict[str, str],
) -> Observed:
    """Hash every regular blob under ``roots`` in ``commit`` (lock files excluded).

    Symlink (120000) and submodule (160000) entries are unsafe; ``on_way`` (from
    ``links_on_way``) adds those above or at a root. Blobs come from one ``git cat-file``
    process and are hashed in this process. Returns ``Observed``.
    """
    seen = Observed()
    all_paths = tuple(p for r in roots for p in r.paths)
    for path, problem in on_way.items():
        if any(a in on_way for a in ancestors(path)[:-1]):
            continue  # only the top-most link matters
        if under_any(path, all_paths) or any(under(p, path + "/") for p in all_paths):
            seen.unsafe[path] = problem
    blobs: list[git.TreeEntry] = []
    in_lane = covers(all_paths)
    for entry in git.ls_tree(repo, commit, outermost(all_paths)):
        if not in_lane(entry.path) or entry.path in locks:
            continue
        if entry.mode == git.MODE_SYMLINK:
            seen.unsafe[entry.path] = SYMLINK_PROBLEM
        elif entry.mode == git.MODE_GITLINK:
            seen.unsafe[entry.path] = GITLINK_PROBLEM
        elif entry.mode in git.REGULAR_MODES and entry.kind == "blob":
            blobs.append(entry)
        else:
            seen.unsafe[entry.path] = f"unexpected tree entry (mode {entry.mode})"
    flavours = FlavourRule(roots)
    for entry, data in zip(blobs, git.read_blobs(repo, [b.oid for b in blobs]), strict=True):
        for canonical in flavours.flags(entry.path):
            try:
                seen.hashes[(entry.path, canonical)] = content_digest(data, canonical)
            except NotCanonical as e:
                seen.unsafe[entry.path] = canonical_problem(str(e))
                continue
            seen.files.add(entry.path)
            seen.hashed += 1
    return seen
