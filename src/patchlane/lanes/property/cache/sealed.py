"""Entries sealed with the user's cache key, shared by the property lane's two caches (the
run results, ``results``, and the base's oracle audits, ``audits``): canonical bytes, the
key of a description, an entry read back only when its MAC verifies, an entry written
atomically with the oldest of its key pruned (docs/explanation/decisions/0016-caches.md).

An entry is a JSON object in a folder named by its key (the SHA-256 of its description);
its ``mac`` is made over the canonical bytes of the rest, for the folder's name, under a
purpose of the cache's own, so that an entry of one cache can never pass for the other's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

from patchlane.errors import PatchlaneError
from patchlane.infra.cachekey import CacheKey
from patchlane.inputs.jsonio import atomic_write_bytes, loads_strict

ENTRY_LIMIT = 32 * 1024 * 1024
# The name ``write`` gives an entry.
ENTRY_NAME = re.compile(r"[0-9a-f]{32}\.json")


def canonical(value: object) -> bytes:
    """Return ``value`` as canonical JSON bytes (sorted keys, ASCII, no white space).

    Raises ``ValueError``/``TypeError`` for what JSON cannot hold."""
    text = json.dumps(
        value, sort_keys=True, ensure_ascii=True, separators=(",", ":"), allow_nan=False
    )
    return text.encode("ascii")


def key_of(description: object) -> str:
    """Return the cache key (hex SHA-256) of a description (canonical JSON). Raises what
    ``canonical`` raises."""
    return hashlib.sha256(canonical(description)).hexdigest()


def newest(folder: Path) -> list[Path]:
    """Return the entries in ``folder``, most recently used first (none when unreadable)."""
    found = []
    try:
        with os.scandir(folder) as it:
            for entry in it:
                if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False):
                    with contextlib.suppress(OSError):
                        found.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.path))
    except OSError:
        return []
    return [Path(p) for _, p in sorted(found, reverse=True)]


def verified(path: Path, identity: str, key: CacheKey, purpose: str) -> dict[str, object] | None:
    """Return the entry at ``path`` when it is a JSON object whose ``mac`` verifies under
    ``key`` for ``purpose``, its canonical bytes and ``identity`` (its folder), else
    ``None`` (too large, not JSON, no MAC, a wrong one). Raises ``FileNotFoundError`` when
    there is no file."""
    try:
        with path.open("rb") as f:
            data = f.read(ENTRY_LIMIT + 1)
        if len(data) > ENTRY_LIMIT:
            return None
        entry = loads_strict(data.decode("ascii"))
    except FileNotFoundError:
        raise
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(entry, dict):
        return None
    body = {k: v for k, v in entry.items() if k != "mac"}
    try:
        if not key.verifies(purpose, identity, canonical(body), entry.get("mac")):
            return None
    except (TypeError, ValueError, RecursionError):
        return None
    return entry


def discard(path: Path, folder_name: str) -> str:
    """Remove an entry that did not verify and return its path below the cache's
    directory (``folder_name``, the cache's folder, first). Only a name ``write`` gives, in
    a folder that is not a link, is removed; never raises."""
    folder = path.parent
    linked = folder.is_symlink() or folder.parent.is_symlink()
    if ENTRY_NAME.fullmatch(path.name) and not linked:
        with contextlib.suppress(OSError):
            path.unlink()
    return f"{folder_name}/{folder.name[:12]}/{path.name}"


def entries(
    folder: Path, folder_name: str, key: CacheKey, purpose: str, unverified: list[str]
) -> Iterator[tuple[Path, dict[str, object]]]:
    """The verified entries of one key's ``folder``, newest first, each with its path.
    An entry whose MAC does not verify is removed and its name (``discard``, below the
    cache's ``folder_name``) appended to ``unverified``; one pruned meanwhile by another run is passed over. Raises nothing
    for what the cache holds."""
    for path in newest(folder):
        try:
            entry = verified(path, folder.name, key, purpose)
        except FileNotFoundError:
            continue  # pruned by another lane run meanwhile
        if entry is None:
            unverified.append(discard(path, folder_name))
            continue
        yield path, entry


def touch(path: Path) -> None:
    """Mark an entry recently used, so that it is kept when its key's variants are pruned.
    Never raises."""
    with contextlib.suppress(OSError):
        os.utime(path)


def write(folder: Path, entry: dict[str, object], key: CacheKey, purpose: str, keep: int) -> str:
    """Write ``entry`` sealed (its ``mac`` added) into ``folder`` (named by its key),
    atomically, then prune the folder to its ``keep`` newest; return ``""`` or why it could
    not be written. The entry is written in its own key order; the MAC is over the sorted
    form."""
    try:
        body = canonical(entry)
        digest = hashlib.sha256(body).hexdigest()
        mac = key.mac(purpose, folder.name, body)
        text = json.dumps({**entry, "mac": mac}, ensure_ascii=True, allow_nan=False)
        data = text.encode("ascii")
    except (TypeError, ValueError):
        return "the result cannot be written as JSON"
    try:
        atomic_write_bytes(folder / f"{digest[:32]}.json", data)
    except (OSError, PatchlaneError) as e:
        return f"the cache cannot be written ({e})"
    for stale in newest(folder)[keep:]:
        with contextlib.suppress(OSError):
            stale.unlink()
    return ""
