"""The fixture bytes of a commit: ``git ls-tree`` and one ``git cat-file --batch``.

Nothing here touches the work tree: the gate's verdict is about the head commit.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from patchlane import git
from patchlane.config import FixtureRoot
from patchlane.lanes.fixture_attributes import candidates, is_attribute_file
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


@dataclass(frozen=True)
class Way:
    """What lies on the way to the fixture roots in a commit: ``problems`` (``{path:
    problem}`` for each symlink or submodule entry at a root or above one) and the
    ``.gitattributes`` blobs in the directories above or at a root (``attributes``)."""

    problems: dict[str, str]
    attributes: tuple[git.TreeEntry, ...] = ()


def _entries(repo: Path, commit: str, paths: Iterable[str]) -> list[git.TreeEntry]:
    """Return the entries of ``commit`` at exactly ``paths`` (one non-recursive ``ls-tree``;
    absent paths are left out)."""
    wanted = sorted(set(paths))
    if not wanted:
        return []
    raw = git.out(repo, "ls-tree", "-z", "--full-tree", commit, "--", *wanted)
    asked = frozenset(wanted)
    entries = []
    for record in raw.split(b"\0"):
        meta, _, name = record.partition(b"\t")
        if not record:
            continue
        mode, kind, oid = meta.decode("ascii").split(" ")
        path = os.fsdecode(name)
        if path in asked:
            entries.append(git.TreeEntry(mode, kind, oid, path))
    return entries


def way_of(
    repo: Path, commit: str, paths: Iterable[str], attribute_roots: Iterable[str] = ()
) -> Way:
    """Return the ``Way`` to ``paths`` in ``commit``, with the ``.gitattributes`` blobs that
    can apply to something under ``attribute_roots`` (the fixture roots), from one
    non-recursive ``git ls-tree``. Raises ``GitError`` when git cannot read the commit."""
    wanted = {a for p in paths for a in ancestors(p)}
    # "a/b/" and "a/b" alike: the root's own directory may hold one too.
    attribute_files = frozenset(candidates(r.rstrip("/") + "/" for r in attribute_roots))
    found: dict[str, str] = {}
    attributes: list[git.TreeEntry] = []
    for entry in _entries(repo, commit, wanted | attribute_files):
        if entry.path in attribute_files and entry.kind == "blob":
            attributes.append(entry)
        if entry.path not in wanted:
            continue
        if entry.mode == git.MODE_SYMLINK:
            found[entry.path] = SYMLINK_PROBLEM
        elif entry.mode == git.MODE_GITLINK:
            found[entry.path] = GITLINK_PROBLEM
    return Way(found, tuple(attributes))


def links_on_way(repo: Path, commit: str, paths: Iterable[str]) -> dict[str, str]:
    """Return ``{path: problem}`` for every symlink or submodule entry of ``commit`` at one
    of ``paths`` or their ancestors (one non-recursive ``git ls-tree``)."""
    return way_of(repo, commit, paths).problems


def attribute_files_at(repo: Path, commit: str, wanted: Iterable[str]) -> dict[str, bytes]:
    """Return ``{path: bytes}`` for each of the ``.gitattributes`` paths ``wanted`` that
    ``commit`` holds as a blob (a symlink's bytes are its target text: see
    ``observe_commit``), from one ``ls-tree`` and one ``cat-file``. Raises ``GitError``
    when git cannot read the commit."""
    entries = [e for e in _entries(repo, commit, wanted) if e.kind == "blob"]
    if not entries:
        return {}
    blobs = git.read_blobs(repo, [e.oid for e in entries])
    return {e.path: data for e, data in zip(entries, blobs, strict=True)}


def observe_commit(
    repo: Path,
    commit: str,
    roots: tuple[FixtureRoot, ...],
    locks: frozenset[str],
    on_way: dict[str, str],
    attributes_above: tuple[git.TreeEntry, ...] = (),
) -> Observed:
    """Hash every regular blob under ``roots`` in ``commit`` (lock files excluded).

    Symlink (120000) and submodule (160000) entries are unsafe; ``on_way`` (from
    ``way_of``) adds those above or at a root. Blobs come from one ``git cat-file``
    process and are hashed in this process. The bytes of every ``.gitattributes`` under a
    root and of ``attributes_above`` (``Way.attributes``) are kept in
    ``Observed.attribute_files``, read in the same process; one stored as a symlink counts
    with its target text, since the version of git that checks the commit out may take
    attributes from that blob. Returns ``Observed``.
    """
    seen = Observed()
    all_paths = tuple(p for r in roots for p in r.paths)
    for path, problem in on_way.items():
        if any(a in on_way for a in ancestors(path)[:-1]):
            continue  # only the top-most link matters
        if under_any(path, all_paths) or any(under(p, path + "/") for p in all_paths):
            seen.unsafe[path] = problem
    blobs: list[git.TreeEntry] = []
    # Read for their bytes only: .gitattributes that are not hashed here (above a root, a
    # symlink or lock under one).
    extra: dict[str, git.TreeEntry] = {e.path: e for e in attributes_above}
    in_lane = covers(all_paths)
    for entry in git.ls_tree(repo, commit, outermost(all_paths)):
        if not in_lane(entry.path):
            continue
        if entry.kind == "blob" and is_attribute_file(entry.path):
            extra[entry.path] = entry
        if entry.path in locks:
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
    hashed = frozenset(b.path for b in blobs)
    reads = [*blobs, *(e for p, e in sorted(extra.items()) if p not in hashed)]
    for entry, data in zip(reads, git.read_blobs(repo, [b.oid for b in reads]), strict=True):
        if entry.path in extra:
            seen.attribute_files[entry.path] = data
        if entry.path not in hashed:
            continue
        for canonical in flavours.flags(entry.path):
            try:
                seen.hashes[(entry.path, canonical)] = content_digest(data, canonical)
            except NotCanonical as e:
                seen.unsafe[entry.path] = canonical_problem(str(e))
                continue
            seen.files.add(entry.path)
            seen.hashed += 1
    return seen
