"""What the fixture roots hold: hashes of every regular file, and every unsafe entry.

Two sources give the same ``Observed``: the work tree (here: walked with directory
descriptors, never following a symlink) and a commit (``lanes.commit_tree``: ``git
ls-tree`` and one ``git cat-file --batch``, no access to the work tree at all).
"""

from __future__ import annotations

import errno
import os
import stat
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from patchlane.config import FixtureRoot
from patchlane.lanes.fixture_attributes import (
    ATTRIBUTES_FILE,
    MAX_ATTRIBUTE_BYTES,
    candidates,
)
from patchlane.lanes.hashing import (
    DIR_FLAGS,
    READ_FLAGS,
    SYMLINK_PROBLEM,
    Hashed,
    Progress,
    default_workers,
    hash_at,
    run_jobs,
    unsafe_kind_problem,
)
from patchlane.lanes.statcache import StatCache
from patchlane.lock import covers
from patchlane.paths import symlink_on_way, to_fs, under

# Deeper nesting than this is refused rather than walked: it bounds the directory
# descriptors held open and the recursion, and no real fixture tree comes near it.
MAX_DEPTH = 128
# Hash the pending files and close finished directories after this many are open.
DIR_BATCH = 256
GITLINK_PROBLEM = "submodule (gitlink): its bytes are not in this repository"


@dataclass
class Observed:
    """Hashes by ``(path, canonical)``, regular files seen, unsafe paths with why, and the
    bytes of the ``.gitattributes`` files under or above the roots (``attribute_files``:
    what ``lanes.fixture_attributes`` asks git about)."""

    hashes: dict[tuple[str, bool], str] = field(default_factory=dict)
    files: set[str] = field(default_factory=set)
    unsafe: dict[str, str] = field(default_factory=dict)
    hashed: int = 0
    cached: int = 0
    attribute_files: dict[str, bytes] = field(default_factory=dict)


def outermost(paths: Iterable[str]) -> list[str]:
    """Return the root paths to walk: each distinct path not already under another one."""
    unique = sorted(set(paths))
    return [p for p in unique if not any(q != p and under(p, q) for q in unique)]


class FlavourRule:
    """Which hash flavours a path needs: canonical for ``*.json`` under a ``canonical_json``
    root, raw otherwise (both when two overlapping roots disagree)."""

    def __init__(self, roots: tuple[FixtureRoot, ...]) -> None:
        self.raw_only = not any(r.canonical_json for r in roots)
        self.rules = [(covers(r.paths), r.canonical_json) for r in roots]

    def flags(self, path: str) -> tuple[bool, ...]:
        """Return the canonical-JSON flags ``path`` is hashed with (one or both)."""
        if self.raw_only or not path.endswith(".json"):
            return (False,)
        found = {canonical for covered, canonical in self.rules if covered(path)}
        return tuple(sorted(found)) or (False,)


def case_collisions(paths: Iterable[str]) -> list[tuple[str, str]]:
    """Return pairs of distinct paths (files or their directories) that a case-insensitive
    file system (macOS, Windows) would store as one, sorted."""
    every: set[str] = set()
    for p in paths:
        every.add(p)
        parent = p.rpartition("/")[0]
        while parent and parent not in every:  # each directory is added once
            every.add(parent)
            parent = parent.rpartition("/")[0]
    folded = [
        # NFC as well: macOS also folds composed and decomposed accents together.
        (p.casefold() if p.isascii() else unicodedata.normalize("NFC", p.casefold()), p)
        for p in every
    ]
    if len({key for key, _ in folded}) == len(folded):
        return []
    groups: dict[str, list[str]] = {}
    for key, p in folded:
        groups.setdefault(key, []).append(p)
    pairs: list[tuple[str, str]] = []
    for group in groups.values():
        if len(group) > 1:
            first, *rest = sorted(group)
            pairs.extend((first, other) for other in rest)
    return sorted(pairs)


class _Job(NamedTuple):
    dir_fd: int
    name: str
    rel: str
    canonical: bool


def _hash_job(job: _Job, buf: bytearray) -> Hashed:
    return hash_at(job.dir_fd, job.name, job.canonical, buf)


class _Walker:
    """Walks fixture roots below an open repository descriptor.

    Every directory is opened relative to its parent with ``O_NOFOLLOW``, every file
    relative to its directory, so a directory swapped for a symlink during the walk is
    refused (``ELOOP``) instead of followed. Files are queued and hashed in batches by a
    few threads while their directory descriptors are still open.
    """

    def __init__(
        self,
        roots: tuple[FixtureRoot, ...],
        locks: frozenset[str],
        cache: StatCache,
        progress: Progress,
    ) -> None:
        self.flavours = FlavourRule(roots)
        self.locks = locks
        self.cache = cache
        self.progress = progress
        self.seen = Observed()
        self.jobs: list[_Job] = []
        self.idle_fds: list[int] = []  # fully listed directories, closed at the next flush
        self.workers = default_workers()

    def walk_root(self, repo: Path, repo_fd: int, root_path: str) -> None:
        """Queue every file under ``root_path`` and record every unsafe entry; a symlink
        on the way to the root is itself unsafe and nothing below it is looked at."""
        link = symlink_on_way(repo, root_path)
        if link is not None:
            self.seen.unsafe[link] = SYMLINK_PROBLEM
            return
        parts = root_path.rstrip("/").split("/")
        fd = repo_fd
        for i, part in enumerate(parts[:-1]):
            sub = self._open_dir(fd, part, "/".join(parts[: i + 1]))
            if sub is None:
                return
            self.idle_fds.append(sub)
            fd = sub
        rel = "/".join(parts)
        try:
            st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as e:
            self.seen.unsafe[rel] = f"cannot stat: {e.strerror}"
            return
        if stat.S_ISDIR(st.st_mode):
            sub = self._open_dir(fd, parts[-1], rel)
            if sub is not None:
                try:
                    self._walk_dir(sub, rel + "/", 1)
                finally:
                    self.idle_fds.append(sub)
        elif root_path.endswith("/"):
            return  # "x/" names a directory; a file called x is not under it
        elif stat.S_ISREG(st.st_mode):
            self._file(fd, parts[-1], rel, st)
        else:
            self.seen.unsafe[rel] = unsafe_kind_problem(st.st_mode)

    def _open_dir(self, parent_fd: int, name: str, rel: str) -> int | None:
        try:
            return os.open(name, DIR_FLAGS, dir_fd=parent_fd)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            if e.errno == errno.ELOOP:
                self.seen.unsafe[rel] = SYMLINK_PROBLEM
            else:
                self.seen.unsafe[rel] = f"cannot open directory: {e.strerror}"
            return None

    def _walk_dir(self, fd: int, prefix: str, depth: int) -> None:
        subdirs: list[str] = []
        unsafe = self.seen.unsafe
        try:
            with os.scandir(fd) as it:
                for entry in it:
                    try:
                        # d_type answers these without a system call on common file
                        # systems; regular files first, they are nearly all of a tree.
                        if entry.is_file(follow_symlinks=False):
                            self._file(fd, entry.name, prefix + entry.name, entry)
                            continue
                        rel = prefix + entry.name
                        if rel in self.locks:
                            continue  # read (and refused if unsafe) as a lock, not here
                        if entry.is_dir(follow_symlinks=False):
                            subdirs.append(entry.name)
                        elif entry.is_symlink():
                            unsafe[rel] = SYMLINK_PROBLEM
                            if entry.name == ATTRIBUTES_FILE:
                                self._attributes(fd, entry.name, rel)
                        else:
                            unsafe[rel] = unsafe_kind_problem(
                                entry.stat(follow_symlinks=False).st_mode
                            )
                    except FileNotFoundError:
                        continue  # removed while we listed it: not there
        except OSError as e:
            unsafe[prefix.rstrip("/")] = f"cannot list directory: {e.strerror}"
            return
        for name in subdirs:
            rel = prefix + name
            if depth >= MAX_DEPTH:
                self.seen.unsafe[rel] = f"nested deeper than {MAX_DEPTH} directories"
                continue
            sub = self._open_dir(fd, name, rel)
            if sub is None:
                continue
            try:
                self._walk_dir(sub, rel + "/", depth + 1)
            finally:
                self.idle_fds.append(sub)
            if len(self.idle_fds) >= DIR_BATCH:
                self.flush()

    def _file(
        self, dir_fd: int, name: str, rel: str, entry: os.DirEntry[str] | os.stat_result
    ) -> None:
        if name == ATTRIBUTES_FILE:
            self._attributes(dir_fd, name, rel)
        if rel in self.locks:
            return
        flags = (False,) if self.flavours.raw_only else self.flavours.flags(rel)
        for canonical in flags:
            if self.cache.enabled:
                st = (
                    entry
                    if isinstance(entry, os.stat_result)
                    else entry.stat(follow_symlinks=False)
                )
                digest = self.cache.lookup((rel, canonical), st)
                if digest is not None:
                    self.seen.hashes[(rel, canonical)] = digest
                    self.seen.files.add(rel)
                    self.seen.cached += 1
                    continue
            self.jobs.append(_Job(dir_fd, name, rel, canonical))

    def _attributes(self, dir_fd: int, name: str, rel: str) -> None:
        """Keep the bytes of the ``.gitattributes`` ``name`` in the open directory."""
        data = read_attribute_file(dir_fd, name)
        if data is not None:
            self.seen.attribute_files[rel] = data

    def flush(self) -> None:
        """Hash the queued files, then close the directories that are finished."""
        try:
            results = run_jobs(self.jobs, _hash_job, workers=self.workers, progress=self.progress)
            for job, result in zip(self.jobs, results, strict=True):
                self._record(job, result)
        finally:
            self.jobs.clear()
            fds, self.idle_fds = self.idle_fds, []
            for fd in fds:
                os.close(fd)

    def _record(self, job: _Job, result: Hashed) -> None:
        if result.gone:
            return
        if result.problem is not None or result.sha256 is None or result.stat is None:
            self.seen.unsafe[job.rel] = result.problem or "could not be hashed"
            return
        self.seen.hashes[(job.rel, job.canonical)] = result.sha256
        self.seen.files.add(job.rel)
        self.seen.hashed += 1
        self.cache.record((job.rel, job.canonical), result.stat, result.sha256)


def observe_worktree(
    repo: Path,
    roots: tuple[FixtureRoot, ...],
    locks: frozenset[str],
    cache: StatCache,
    progress: Progress,
) -> Observed:
    """Hash every regular file under ``roots`` in the work tree (lock files excluded).

    Symlinks (in a root or on the way to one), FIFOs, sockets and devices are recorded as
    unsafe and never opened or followed. Returns ``Observed``; the stat cache is updated in
    memory (the caller saves it).
    """
    walker = _Walker(roots, locks, cache, progress)
    repo_fd = os.open(repo, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for root_path in outermost(p for r in roots for p in r.paths):
            walker.walk_root(repo, repo_fd, root_path)
        walker.flush()
    finally:
        for fd in walker.idle_fds:
            os.close(fd)
        os.close(repo_fd)
    above = candidates(p.rstrip("/") + "/" for r in roots for p in r.paths)
    for rel, data in attribute_files_in_worktree(repo, above).items():
        walker.seen.attribute_files.setdefault(rel, data)
    progress.finish()
    return walker.seen


def read_attribute_file(dir_fd: int, name: str) -> bytes | None:
    """Return the bytes of the ``.gitattributes`` ``name`` in the directory ``dir_fd``, never
    following a link: a symlink's bytes are its target text (what git takes from the blob
    such a link is committed as); ``None`` when there is no regular file or link there, or
    it cannot be read. Reads at most ``MAX_ATTRIBUTE_BYTES + 1`` bytes (more is refused
    later, by size)."""
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    except OSError as e:
        if e.errno != errno.ELOOP:
            return None
        try:
            return os.fsencode(os.readlink(name, dir_fd=dir_fd))
        except OSError:
            return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        os.set_blocking(fd, True)
        chunks = []
        left = MAX_ATTRIBUTE_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def attribute_files_in_worktree(repo: Path, wanted: Iterable[str]) -> dict[str, bytes]:
    """Return ``{path: bytes}`` for each ``.gitattributes`` path of ``wanted`` in the work
    tree (see ``read_attribute_file``). One behind a symlinked directory is not looked at:
    that directory is not the repository's (the walk reports it as unsafe)."""
    found: dict[str, bytes] = {}
    for rel in wanted:
        parent = rel.rpartition("/")[0]
        if parent and symlink_on_way(repo, parent) is not None:
            continue
        try:
            dir_fd = os.open(to_fs(repo, parent) if parent else repo, DIR_FLAGS)
        except OSError:
            continue
        try:
            data = read_attribute_file(dir_fd, rel.rpartition("/")[2])
        finally:
            os.close(dir_fd)
        if data is not None:
            found[rel] = data
    return found
