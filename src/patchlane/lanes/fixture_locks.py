"""Reading fixture locks safely (work tree or commit) and the lock-update rule.

A lock update is a review event (DESIGN.md §2): when the patch changes a lock, the new lock
must carry a one-line reason, and not the base's reason again.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from patchlane import git
from patchlane.config import FixtureLane, FixtureRoot
from patchlane.errors import LockError
from patchlane.lanes.commit_tree import ancestors
from patchlane.lanes.fixture_report import LockUpdate
from patchlane.lanes.hashing import (
    DIR_FLAGS,
    READ_FLAGS,
    SYMLINK_PROBLEM,
    file_kind,
    read_all,
)
from patchlane.lock import Lock, lenient_reason, parse_lock_bytes
from patchlane.paths import symlink_on_way


@dataclass(frozen=True)
class LockState:
    """One root's lock as checked: parsed (or absent), its hash, and the update rule's
    outcome (a problem that turns the lane red, or an update to show in the note)."""

    root: FixtureRoot
    lock: Lock | None  # None: absent at the checked side
    sha256: str | None
    changed: bool
    problem: str | None
    update: LockUpdate | None


def read_worktree_lock(repo: Path, rel: str) -> bytes | None:
    """Return the bytes of the lock at ``rel`` in the work tree, or ``None`` if absent.

    Opened component by component with ``O_NOFOLLOW`` (and without blocking), so neither
    a symlink on the way nor a FIFO in its place is ever read. Raises ``LockError``.
    """
    link = symlink_on_way(repo, rel)
    if link is not None:
        where = "it is a symlink" if link == rel else f"{link!r} is a symlink"
        raise LockError(rel, f"{where}: a lock is never read through a symlink")
    parts = rel.split("/")
    fds: list[int] = []
    try:
        fd = os.open(repo, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        fds.append(fd)
        for part in parts[:-1]:
            fd = os.open(part, DIR_FLAGS, dir_fd=fd)
            fds.append(fd)
        fd = os.open(parts[-1], READ_FLAGS, dir_fd=fd)
        fds.append(fd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise LockError(rel, f"not a regular file (a {file_kind(st.st_mode)}): it was not read")
        return read_all(fd, st.st_size)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise LockError(rel, "a symlink appeared on the way: it was not followed") from e
        raise LockError(rel, f"cannot read: {e.strerror}") from e
    finally:
        for fd in reversed(fds):
            os.close(fd)


def read_commit_lock(repo: Path, commit: str, rel: str, on_way: dict[str, str]) -> bytes | None:
    """Return the bytes of the lock at ``rel`` in ``commit``, or ``None`` if absent.

    Raises ``LockError`` when it, or a directory on the way, is a symlink or submodule.
    """
    for above in ancestors(rel):
        if above in on_way:
            where = "it" if above == rel else repr(above)
            kind = "symlink" if on_way[above] == SYMLINK_PROBLEM else "submodule"
            raise LockError(
                rel,
                f"{where} is a {kind} in commit {commit[:12]}: a lock is never read through one",
            )
    found = git.read_file_at(repo, commit, rel)
    if found is None:
        return None
    entry, data = found
    if entry.mode not in git.REGULAR_MODES:
        raise LockError(rel, f"not a regular file in commit {commit[:12]} (mode {entry.mode})")
    return data


def lock_states(
    repo: Path,
    lane: FixtureLane,
    heads: dict[str, bytes | None],
    base_commit: str | None,
    changed: frozenset[str],
) -> list[LockState]:
    """Parse each root's lock and apply the lock-update rule against ``base_commit``.

    Raises ``LockError`` for a malformed lock, or for one that is absent although the
    patch did not delete it (it never existed: nothing pins the bytes).
    """
    locks = frozenset(lane.locks)
    states = []
    for root in lane.roots:
        data = heads[root.lock]
        base_data: bytes | None = None
        if base_commit is not None:
            found = git.read_file_at(repo, base_commit, root.lock)
            base_data = None if found is None else found[1]
        was_changed = root.lock in changed or (base_commit is not None and base_data != data)
        if data is None:
            if not was_changed:
                raise LockError(
                    root.lock, "no such file (write it with: patchlane fixture lock --reason '...')"
                )
            gone = "deleted by the patch: a lock can be updated with a reason, never removed"
            states.append(LockState(root, None, None, True, gone, None))
            continue
        lock = parse_lock_bytes(data, root.lock, root, locks=locks)
        digest = hashlib.sha256(data).hexdigest()
        problem: str | None = None
        update: LockUpdate | None = None
        if was_changed:
            base_reason = None if base_data is None else lenient_reason(base_data)
            if lock.reason is None:
                problem = "changed without a 'reason': a lock update must say why, in one line"
            elif base_reason is not None and _same_reason(lock.reason, base_reason):
                problem = (
                    f"changed but keeps the base's reason {base_reason!r}: "
                    "a lock update needs a new one-line reason"
                )
            else:
                update = LockUpdate(root.lock, lock.reason)
        states.append(LockState(root, lock, digest, was_changed, problem, update))
    return states


def _same_reason(a: str, b: str) -> bool:
    """Return whether two reasons differ only in case or spacing: re-spacing the old reason
    is not a new one."""
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()
