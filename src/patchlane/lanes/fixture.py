"""The fixture lane (DESIGN.md §1, §2): do the fixture bytes equal their reviewed locks?

Two evidence sources share one comparison and one report: the work tree
(``check_worktree``, for a developer at the keyboard) and a commit (``check_commit``, what
the gate uses: the verdict is about the head commit, not whatever the work tree holds).
A lock update is a review event: a changed lock must carry a new one-line reason.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from patchlane import git
from patchlane.config import FixtureLane, FixtureRoot
from patchlane.errors import GitError, InputError, LockError, UsageError
from patchlane.jsonio import atomic_write_text
from patchlane.lanes import fixture_attributes
from patchlane.lanes.commit_tree import attribute_files_at, observe_commit, way_of
from patchlane.lanes.fixture_attributes import AttributeCheck
from patchlane.lanes.fixture_locks import (
    LockState,
    lock_states,
    read_commit_lock,
    read_worktree_lock,
)
from patchlane.lanes.fixture_report import (
    LANE,
    FixtureReport,
    LockProblem,
    LockUpdate,
    RootResult,
    Timings,
    Unsafe,
    report_for_lock_error,
)
from patchlane.lanes.hashing import Progress
from patchlane.lanes.observe import Observed, case_collisions, observe_worktree
from patchlane.lanes.statcache import StatCache
from patchlane.lock import covers, format_updated, parse_lock, render_lock
from patchlane.lock import reason_problem as lock_reason_problem
from patchlane.paths import path_problem, symlink_on_way, to_fs
from patchlane.ui import Output

if TYPE_CHECKING:
    from datetime import datetime

__all__ = [
    "FixtureReport",
    "LockProblem",
    "LockUpdate",
    "RootResult",
    "Timings",
    "Unsafe",
    "cache_path",
    "check_commit",
    "check_worktree",
    "report_for_lock_error",
    "write_locks",
]

CACHE_NAME = "fixture-cache.json"


# --- the report ----------------------------------------------------------------------------


def _observed_in(root: FixtureRoot, seen: Observed) -> dict[str, str]:
    """Return ``{path: digest}`` for the files under ``root``, in its hash flavour."""
    covered = covers(root.paths)
    hashes = seen.hashes
    out = {}
    for path in seen.files:
        if covered(path):
            digest = hashes.get((path, root.canonical_json and path.endswith(".json")))
            if digest is not None:
                out[path] = digest
    return out


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _attributes(repo: Path, seen: Observed, base_commit: str | None) -> AttributeCheck:
    """Ask git which checkout attributes the observed ``.gitattributes`` give the fixture
    files; with ``base_commit``, those the base already gave them are not the patch's
    (``judge_against_base``: one ``ls-tree`` and one ``cat-file`` more, only when some
    attribute applies). Returns the ``AttributeCheck``. Raises ``GitError`` when git
    cannot read ``base_commit``."""
    result = fixture_attributes.check(seen.attribute_files, seen.files)
    if result.found and base_commit is not None:
        wanted = fixture_attributes.candidates(a.path for a in result.found)
        at_base = attribute_files_at(repo, base_commit, wanted)
        judged = fixture_attributes.judge_against_base(result.found, seen.attribute_files, at_base)
        result = AttributeCheck(judged, result.problems)
    return result


def _report(
    states: list[LockState],
    seen: Observed,
    *,
    source: str,
    commit: str | None,
    started: float,
    attributes: AttributeCheck | None = None,
) -> FixtureReport:
    missing: set[str] = set()
    extra: set[str] = set()
    changed: set[str] = set()
    roots: list[RootResult] = []
    covered: set[str] = set()  # distinct files: overlapping roots share some
    for state in states:
        root = state.root
        observed = _observed_in(root, seen)
        covered.update(observed)
        if state.lock is not None:
            expected = state.lock.expected
            missing.update(p for p in expected if p not in observed and p not in seen.unsafe)
            extra.update(observed.keys() - expected.keys())
            changed.update(
                p for p in expected.keys() & observed.keys() if expected[p] != observed[p]
            )
        roots.append(
            RootResult(
                paths=root.paths,
                lock=root.lock,
                canonical_json=root.canonical_json,
                files=len(observed),
                lock_sha256=state.sha256,
                lock_changed=state.changed,
                lock_reason=None if state.lock is None else state.lock.reason,
            )
        )
    unsafe = tuple(Unsafe(p, seen.unsafe[p]) for p in sorted(seen.unsafe))
    collisions = tuple(case_collisions(seen.files | seen.unsafe.keys()))
    lock_errors = tuple(
        sorted(
            (LockProblem(s.root.lock, s.problem) for s in states if s.problem is not None),
            key=lambda e: e.lock,
        )
    )
    updates = tuple(
        sorted((s.update for s in states if s.update is not None), key=lambda u: u.lock)
    )
    counts = [
        (len(changed), "changed file"),
        (len(missing), "missing file"),
        (len(extra), "extra file"),
        (len(unsafe), "unsafe path"),
        (len(collisions), "case collision"),
        (len(lock_errors), "lock error"),
    ]
    red = [_plural(n, word) for n, word in counts if n]
    scope = f"{_plural(len(covered), 'file')} under {_plural(len(roots), 'root')}"
    if red:
        status, reason = "fail", f"{', '.join(red)} ({scope})"
    else:
        status, reason = "pass", f"{scope} match their locks"
        for u in updates:
            reason += f"; lock update {u.lock}: {u.reason}"
    attributes = attributes or AttributeCheck()
    events = fixture_attributes.review_events(attributes)
    review = {a.path for a in attributes.found if a.review}
    what = [f"{_plural(len(review), 'fixture path')} with checkout attributes"] if review else []
    if attributes.problems:
        what.append("attributes that could not be evaluated")
    if what:
        reason += f"; to review: {' and '.join(what)} from .gitattributes"
    return FixtureReport(
        status=status,
        reason=reason,
        source=source,
        commit=commit,
        roots=tuple(roots),
        missing=tuple(sorted(missing)),
        extra=tuple(sorted(extra)),
        changed=tuple(sorted(changed)),
        unsafe=unsafe,
        case_collisions=collisions,
        lock_errors=lock_errors,
        lock_updates=updates,
        timings=Timings(round(time.perf_counter() - started, 3), seen.hashed, seen.cached),
        checkout_attributes=attributes.found,
        review_events=events,
    )


# --- public checks -------------------------------------------------------------------------


def cache_path(repo: Path) -> Path:
    """Return where the stat cache lives: inside the git directory, never the work tree.

    Raises ``GitError`` when ``repo`` is not a git work tree.
    """
    return git.git_dir(repo) / "patchlane" / CACHE_NAME


def _stat_cache(repo: Path, use_cache: bool) -> StatCache:
    if not use_cache:
        return StatCache.disabled()
    try:
        return StatCache.load(cache_path(repo))
    except GitError:
        return StatCache.disabled()  # not a repository: nowhere safe to keep a cache


def check_worktree(
    repo: Path,
    lane: FixtureLane,
    *,
    use_cache: bool = True,
    base_commit: str | None = None,
    changed: frozenset[str] = frozenset(),
    out: Output | None = None,
) -> FixtureReport:
    """Compare the fixture bytes in the work tree with each root's lock.

    With ``base_commit`` (the merge base) a lock whose bytes differ from the base's, or that
    is in ``changed``, must carry a new one-line reason. ``use_cache=False`` rehashes every
    file and neither reads nor writes the stat cache. The work tree's ``.gitattributes``
    on the way of the fixtures are asked about (``lanes.fixture_attributes``): an attribute
    that changes what a checkout holds is a review event (with ``base_commit``, only one
    the base did not already give). Returns a ``FixtureReport`` (status ``pass`` or
    ``fail``). Raises ``LockError`` for a lock that is malformed, unsafe or absent, and
    ``GitError`` when git cannot read ``base_commit``.
    """
    started = time.perf_counter()
    heads = {root.lock: read_worktree_lock(repo, root.lock) for root in lane.roots}
    states = lock_states(repo, lane, heads, base_commit, changed)
    cache = _stat_cache(repo, use_cache)
    seen = observe_worktree(repo, lane.roots, frozenset(lane.locks), cache, Progress(out, LANE))
    cache.save()
    attributes = _attributes(repo, seen, base_commit)
    return _report(
        states, seen, source="worktree", commit=None, started=started, attributes=attributes
    )


def check_commit(
    repo: Path,
    commit: str,
    lane: FixtureLane,
    *,
    base_commit: str | None = None,
    changed: frozenset[str] = frozenset(),
) -> FixtureReport:
    """Compare the fixture bytes stored in ``commit`` with the locks stored in ``commit``.

    Reads only git objects (never the work tree). Symlink and submodule entries are red.
    The lock-update rule and the ``.gitattributes`` review events (from the commit's own
    ``.gitattributes``) are as in ``check_worktree``. Returns a ``FixtureReport``.
    Raises ``LockError`` for a malformed, unsafe or absent lock, ``GitError`` for an
    unknown commit.
    """
    started = time.perf_counter()
    commit = git.resolve_commit(repo, commit)
    way = way_of(repo, commit, [*lane.paths, *lane.locks], lane.paths)
    on_way = way.problems
    heads = {root.lock: read_commit_lock(repo, commit, root.lock, on_way) for root in lane.roots}
    states = lock_states(repo, lane, heads, base_commit, changed)
    locks = frozenset(lane.locks)
    seen = observe_commit(repo, commit, lane.roots, locks, on_way, way.attributes)
    attributes = _attributes(repo, seen, base_commit)
    return _report(
        states, seen, source="commit", commit=commit, started=started, attributes=attributes
    )


def write_locks(
    repo: Path,
    lane: FixtureLane,
    reason: str,
    *,
    only: str | None = None,
    now: datetime | None = None,
    out: Output | None = None,
) -> list[tuple[str, int]]:
    """Hash the work tree and write a new lock for each root (or only the root whose lock
    is ``only``), files sorted by path, with ``reason`` and ``updated`` (UTC).

    Nothing is written unless every chosen root can be locked. Returns ``[(lock path, file
    count)]`` in map order. Raises ``UsageError`` for a bad reason or an unknown ``only``,
    ``InputError`` naming the file when a root holds a symlink, FIFO, socket, device, case
    collision, unlockable path or uncanonicalisable JSON, ``LockError`` when a lock path
    itself is unsafe.
    """
    problem = lock_reason_problem(reason)
    if problem:
        raise UsageError(f"--reason {problem}")
    roots = tuple(r for r in lane.roots if only is None or r.lock == only)
    if not roots:
        known = ", ".join(lane.locks)
        raise UsageError(f"--root {only}: no fixture root has this lock (known: {known})")
    for root in roots:
        link = symlink_on_way(repo, root.lock)
        if link is not None:
            raise LockError(
                root.lock, f"{link!r} is a symlink: a lock is never written through one"
            )
    locks = frozenset(lane.locks)
    cache = _stat_cache(repo, True)
    seen = observe_worktree(repo, roots, locks, cache, Progress(out, LANE))
    cache.save()
    if seen.unsafe:
        path = min(seen.unsafe)
        raise InputError(path, f"{seen.unsafe[path]}; no lock was written")
    collisions = case_collisions(seen.files)
    if collisions:
        a, b = collisions[0]
        raise InputError(a, f"differs from {b!r} only in case; no lock was written")
    for path in sorted(seen.files):
        bad = path_problem(path, directory_ok=False)
        if bad:
            raise InputError(path, f"cannot be listed in a lock ({bad}); no lock was written")
    updated = format_updated(now)
    texts = []
    for root in roots:
        files = _observed_in(root, seen)
        text = render_lock(files, reason, updated)
        parse_lock(text, root.lock, root, locks=locks)  # what we write must load back
        texts.append((root, text, len(files)))
    written = []
    for root, text, count in texts:
        atomic_write_text(to_fs(repo, root.lock), text)
        written.append((root.lock, count))
    return written
