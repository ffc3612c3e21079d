"""The stat cache of the work-tree check: unchanged files are not hashed again.

It lives in the git directory (``.git/patchlane/fixture-cache.json``), never in the work
tree, so a patch cannot commit a forged cache; and it follows the racy-git rule, so an edit
made in the same timestamp tick as the hashing cannot hide behind an unchanged stat.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from patchlane.errors import PatchlaneError
from patchlane.jsonio import atomic_write_bytes, encode_text, loads_strict
from patchlane.lanes.hashing import FileStat

# The racy-git rule: a file whose mtime or ctime is this close to (or after) the moment the
# cache was written may have changed again within the same timestamp tick, unseen by stat.
RACY_NS = 2_000_000_000
CACHE_VERSION = 1

CacheKey = tuple[str, bool]  # repository path, canonical-JSON flag


class StatCache:
    """Remembers ``(path, canonical) -> (stat, sha256)`` between worktree checks.

    The file lives in the git directory, never in the work tree: a patch cannot commit a
    forged cache. An entry is trusted only when the file's stat is unchanged *and* its
    mtime and ctime are safely older (``RACY_NS``) than the moment the cache was written,
    so that a write inside the same timestamp tick as the hashing cannot hide. Loading
    never fails: a missing, corrupt or unreadable cache is an empty one.
    """

    def __init__(
        self, path: Path | None, entries: dict[CacheKey, tuple[FileStat, str]], written_ns: int
    ) -> None:
        self.path = path
        self.entries = entries
        self.written_ns = written_ns
        self.started_ns = time.time_ns()
        self.fresh: dict[CacheKey, tuple[FileStat, str]] = {}
        self.racy = False

    @classmethod
    def disabled(cls) -> StatCache:
        """Return a cache that trusts nothing and is never written (``--no-cache``)."""
        return cls(None, {}, 0)

    @classmethod
    def load(cls, path: Path) -> StatCache:
        """Return the cache stored at ``path``; empty when absent, unreadable or malformed.

        The first line is the SHA-256 of the rest: a truncated, bit-flipped or hand-edited
        cache is dropped whole instead of half-trusted.
        """
        try:
            header, _, body = path.read_bytes().partition(b"\n")
            if hashlib.sha256(body).hexdigest().encode("ascii") != header:
                raise ValueError("checksum mismatch")
            entries, written = _parse_cache(loads_strict(body.decode("utf-8")))
        except (OSError, ValueError, TypeError, RecursionError):
            return cls(path, {}, 0)
        return cls(path, entries, written)

    @property
    def enabled(self) -> bool:
        """Return whether this cache is read and written (false for ``--no-cache``)."""
        return self.path is not None

    def lookup(self, key: CacheKey, st: os.stat_result) -> str | None:
        """Return the cached digest for ``key`` if ``st`` proves the file unchanged."""
        hit = self.entries.get(key)
        if hit is None:
            return None
        cached_stat, digest = hit
        mtime, ctime = st.st_mtime_ns, st.st_ctime_ns
        if cached_stat != (st.st_dev, st.st_ino, st.st_size, mtime, ctime, st.st_mode):
            return None
        if (mtime if mtime > ctime else ctime) + RACY_NS >= self.written_ns:
            self.racy = True  # rewrite the cache so that, once old enough, it is trusted
            return None
        self.fresh[key] = hit
        return digest

    def record(self, key: CacheKey, file_stat: FileStat, digest: str) -> None:
        """Remember a digest just computed from a descriptor whose fstat was ``file_stat``."""
        if self.path is not None:
            self.fresh[key] = (file_stat, digest)

    def save(self) -> bool:
        """Write the entries seen in this run, atomically, if they differ from the loaded
        ones (or a racy entry needs a newer write time). Returns whether it wrote.

        The recorded write time is the start of this run, earlier than any hash taken in
        it, which keeps the racy rule conservative. A failed write is not an error: the
        next run simply hashes again.
        """
        if self.path is None or (self.fresh == self.entries and not self.racy):
            return False
        rows = [
            [path, canonical, *file_stat, digest]
            for (path, canonical), (file_stat, digest) in sorted(self.fresh.items())
        ]
        doc = {"version": CACHE_VERSION, "written_ns": self.started_ns, "entries": rows}
        body = encode_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")))
        checksum = hashlib.sha256(body).hexdigest().encode("ascii")
        try:
            atomic_write_bytes(self.path, checksum + b"\n" + body)
        except (OSError, PatchlaneError):  # jsonio reports a refused write as InputError
            return False
        return True


def _parse_cache(doc: object) -> tuple[dict[CacheKey, tuple[FileStat, str]], int]:
    """Return the entries and write time of a loaded cache document.

    Raises ``ValueError`` for anything but exactly the shape ``save`` writes, so that a
    damaged cache is dropped whole rather than half-trusted.
    """
    if not isinstance(doc, dict) or doc.get("version") != CACHE_VERSION:
        raise ValueError("not a cache of this version")
    written = doc.get("written_ns")
    rows = doc.get("entries")
    if type(written) is not int or not isinstance(rows, list):
        raise ValueError("malformed cache")
    entries: dict[CacheKey, tuple[FileStat, str]] = {}
    for row in rows:
        # One unpacking per row (this runs for every file on every warm check). The stat
        # numbers are not type-checked: a value of another type never equals the file's
        # stat, so at worst that file is hashed again.
        path, canonical, dev, ino, size, mtime, ctime, mode, digest = row
        if (
            type(path) is not str
            or type(canonical) is not bool
            or type(digest) is not str
            or len(digest) != 64
        ):
            raise ValueError("malformed cache row")
        entries[(path, canonical)] = ((dev, ino, size, mtime, ctime, mode), digest)
    return entries, written
