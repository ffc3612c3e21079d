"""What the head's tests mean only beside the base (docs/architecture.md, "Evidence rules").

A replay of the head's own tests cannot see what the patch did to those tests. Three checks
put the base beside it, each on trees made from git (never the work tree; a run at the base
is in a detached checkout of it, as the head's run is):

- ``test_changes``: the base version of every changed test file runs against the head's code.
  A base node id of a changed test file that the head no longer collects is a *deleted* test
  (a rename keeps its identity); a base node that fails there is a test whose *expectations
  the patch edited*. Both are review events (``undecided``), never a pass.
- ``skips_that_run_at_base``: a node the suite skipped at the head but that passes at the base
  was hidden by the patch (a skip mark added, code under test that raises ``SkipTest``, an
  ``importorskip`` of a module the patch removed), so it counts as failed. A node that skips
  at the base as well (an environment-conditional ``skipif``) is the suite's own skip.
- ``failures_at_base``: a node that fails at the head and, run the same way, at the base too
  is not the patch's doing (a test that needs a network, a git checkout or a variable this
  machine lacks; a test already broken): no evidence either way, so ``undecided``.
- ``environment_faults``: a test file that cannot import a third-party package at the base as
  well is the environment's fault (exit 2 with the package), not the patch's.

With the map's build command (``build``), each tree is built before its tests run, as the
head's is; a build that fails raises ``BuildFailed``.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchlane.infra import git, sandbox
from patchlane.infra.bytecode import is_bytecode
from patchlane.infra.tree import materialise
from patchlane.inputs.paths import to_fs
from patchlane.lanes.replay.collect import CollectionError, collect
from patchlane.lanes.replay.results import FAILED, PASSED, CollectError, TestRun
from patchlane.lanes.replay.run import child_env, run_tests
from patchlane.project.build import Build, built
from patchlane.project.collects import collects_at
from patchlane.project.testmodules import CONFTEST, ModulePatterns, is_suite_path
from patchlane.project.unmaterialised import doctest_glob_of


@dataclass(frozen=True)
class BaseRun:
    """Where and how the gate runs tests at the base: the repository, the merge base, the
    hash seed of the gate's children, each run's wall clock and the map's build command
    (``None``: none), which every materialised tree runs before its tests."""

    repo: Path
    merge_base: str
    hash_seed: int
    timeout_s: float
    build: Build | None = None


@dataclass(frozen=True)
class ChangedPath:
    """One side of a changed file: git's status letter, the path, and the rename's other side
    (the new path for the old side of a rename, ``None`` otherwise)."""

    status: str
    path: str
    renamed_to: str | None = None


@dataclass(frozen=True)
class TestChanges:
    """What the base versions of the changed test files say about the head.

    ``deleted``: base node ids of changed test files that the head does not collect.
    ``edited``: ``(node id, why)`` for base nodes that fail against the head's code.
    ``ran``: how many base nodes ran.
    """

    deleted: tuple[str, ...]
    edited: tuple[tuple[str, str], ...]
    ran: int


def changed_test_paths(
    changes: Iterable[ChangedPath], test_roots: tuple[str, ...], patterns: ModulePatterns
) -> list[ChangedPath]:
    """Return the changed paths of the test suite (``project.testmodules.is_suite_path`` under the
    map's ``replay.tests`` roots and the base's ``python_files``): a source module under a
    root (tests inside the package) is code, which the slice judges, not a test file."""
    return [c for c in changes if is_suite_path(c.path, test_roots, patterns)]


@dataclass(frozen=True)
class HeadSuite:
    """The head's suite as selection saw it: the node ids it collects (``collected``), its
    test files that do not collect (``broken``), and the slice's node ids
    (``slice_ids``)."""

    collected: frozenset[str]
    broken: frozenset[str]
    slice_ids: Sequence[str]


def test_changes(
    base: BaseRun, head: str, changed: Sequence[ChangedPath], suite: HeadSuite
) -> TestChanges:
    """Run the base version of every changed test file against the head's code.

    ``changed``: the changed paths under the test roots (both sides of renames);
    ``suite``: what the head collects, which of its test files do not collect, and the
    slice (``HeadSuite``). When a changed file under the test roots is not itself a test module (a
    helper, a data file), the slice's other tests also run beside the base versions, since
    their expectations may live there; with ``build``, the tree is built first. A test file
    is what the base's pytest collects (``project.collects``): a test module by its
    ``python_files`` or a text doctest by its ``--doctest-glob``. Returns the
    ``TestChanges``. Raises ``GitError`` when a commit cannot be read, ``BuildFailed``.
    """
    return judged(changed, suite, base_versions(base, head, changed, suite.slice_ids))


@dataclass(frozen=True)
class BaseVersions:
    """The run of the base versions of the changed test files at the head: the test files
    written (``at_base``) and the run (``None``: nothing to run)."""

    at_base: tuple[str, ...]
    run: TestRun | None


def changes_helpers(repo: Path, merge_base: str, changed: Sequence[ChangedPath]) -> bool:
    """Return whether a changed path under the test roots is neither a test file nor a
    ``conftest.py`` (a helper, a data file): then the slice's other tests run beside the
    base versions (``test_changes``), so that run needs the slice."""
    is_test = _test_file_at(repo, merge_base)
    return any(not is_test(c.path) and c.path.rsplit("/", 1)[-1] != CONFTEST for c in changed)


def _test_file_at(repo: Path, merge_base: str) -> Callable[[str], bool]:
    base_suite = collects_at(repo, merge_base)  # the base's python_files and doctest globs (§2)

    def is_test(path: str) -> bool:  # a changed path under the test roots: wherever it is
        glob = doctest_glob_of(path, base_suite.doctest_globs)
        return base_suite.modules.is_test_module(path) or glob is not None

    return is_test


def base_versions(
    base: BaseRun, head: str, changed: Sequence[ChangedPath], slice_ids: Sequence[str]
) -> BaseVersions:
    """Run the base version of every changed test file in a fresh tree of ``head`` (and,
    beside a changed helper, the slice's tests in files the patch left alone: ``slice_ids``
    is read only then). Returns the ``BaseVersions``. Raises ``GitError`` when a commit
    cannot be read, ``BuildFailed``."""
    repo, merge_base = base.repo, base.merge_base
    is_test = _test_file_at(repo, merge_base)
    with tempfile.TemporaryDirectory(prefix="patchlane-base-tests-") as tmp:
        tree = _tree(repo, head, Path(tmp) / "tree", base.build, "head, again")
        at_base = _write_base_versions(repo, merge_base, tree, changed, is_test)
        names = [(c.path, c.path.rsplit("/", 1)[-1]) for c in changed]
        helpers = any(not is_test(p) and n != CONFTEST for p, n in names)
        # Beside a changed helper, the slice's tests in files the patch left alone run too:
        # their expectations may live in the helper. A test file the patch changed or added
        # is judged by its base version (or has none), never here.
        touched = {c.path for c in changed}
        others = [
            n for n in slice_ids if helpers and "::" in n and n.split("::", 1)[0] not in touched
        ]
        if not at_base and not others:
            return BaseVersions(tuple(at_base), None)
        run = run_tests(
            tree, nodeids=others, files=at_base, hash_seed=base.hash_seed, timeout_s=base.timeout_s
        )
    return BaseVersions(tuple(at_base), run)


def judged(changed: Sequence[ChangedPath], suite: HeadSuite, ran: BaseVersions) -> TestChanges:
    """Return the deleted tests and edited expectations (``TestChanges``) that ``ran`` (the
    run of the base versions of ``changed``: ``base_versions``) shows against what the
    head collects (``suite``)."""
    run, at_base = ran.run, ran.at_base
    if run is None:
        return TestChanges((), (), 0)
    head_collected, head_broken = suite.collected, suite.broken
    renamed = {c.path: c.renamed_to for c in changed if c.renamed_to is not None}
    # A test moved to another file or into a class keeps its name (its last part). Counting
    # it as moved is safe: its base version has just run against the head's code, so an
    # expectation changed on the way shows up as an edited one.
    touched = {c.path for c in changed} | set(renamed.values())
    moved_names = {n.rsplit("::", 1)[-1] for n in head_collected if n.split("::", 1)[0] in touched}
    deleted: list[str] = []
    for nodeid in run.collected:
        path, _, rest = nodeid.partition("::")
        if path not in at_base or path in head_broken:
            continue
        moved = renamed.get(path)
        if nodeid in head_collected or (moved is not None and f"{moved}::{rest}" in head_collected):
            continue
        if nodeid.rsplit("::", 1)[-1] in moved_names:
            continue
        deleted.append(nodeid)
    edited = [(n, r.why) for n, r in sorted(run.results.items()) if r.outcome == FAILED]
    edited += [
        (e.nodeid, f"the base version does not collect at the head: {e.message}")
        for e in run.collect_errors
        if e.nodeid in at_base
    ]
    return TestChanges(tuple(sorted(deleted)), tuple(edited), len(run.results))


def _write_base_versions(
    repo: Path,
    merge_base: str,
    tree: Path,
    changed: Sequence[ChangedPath],
    is_test: Callable[[str], bool],
) -> list[str]:
    """Put the base version of each changed path into the materialised ``tree`` (none for a
    path new at the head); return the test files (``is_test``) written."""
    at_base: list[str] = []
    for c in changed:
        if is_bytecode(c.path):
            continue  # never written, from either side (patchlane.infra.bytecode)
        found = git.read_file_at(repo, merge_base, c.path)
        # New at the head: the base has no expectation here (the head's file is removed).
        data = None if found is None or found[0].mode == git.MODE_SYMLINK else found[1]
        _replace_below(tree, c.path, data)
        if data is not None and is_test(c.path):
            at_base.append(c.path)
    return at_base


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _replace_below(tree: Path, rel: str, data: bytes | None) -> None:
    """Remove the file or link at ``rel`` below ``tree`` and, with ``data``, write it anew.

    The head's build ran in ``tree`` (confined, but with the tree writable: the patch's
    own build script): any folder on the way may now be a link out of the tree, and this
    runs as the user, outside the sandbox. So no link is ever followed: each folder is
    opened relative to the one before it with ``O_NOFOLLOW``, and a link or a file where
    a folder belongs is removed (the entry in the tree, never what it names) and replaced
    by a real folder. Returns nothing; raises ``OSError`` (the leaf is a folder)."""
    *folders, leaf = rel.rstrip("/").split("/")
    fd = os.open(tree, _DIR_FLAGS)
    try:
        for name in folders:
            fd = _enter(fd, name)
        try:
            found = os.stat(leaf, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            found = None
        if found is not None and not stat.S_ISDIR(found.st_mode):
            os.unlink(leaf, dir_fd=fd)  # a file, or a link itself: never what it names
        if data is not None:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            with os.fdopen(os.open(leaf, flags, 0o644, dir_fd=fd), "wb") as f:
                f.write(data)
    finally:
        os.close(fd)


def _enter(fd: int, name: str) -> int:
    """Open the folder ``name`` in the folder ``fd`` (made when missing; a link or a file
    there replaced by a folder), close ``fd`` and return the new one."""
    try:
        try:
            child = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            os.mkdir(name, 0o755, dir_fd=fd)
            child = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except OSError as e:
            if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            os.unlink(name, dir_fd=fd)  # the link itself (or the file), not its target
            os.mkdir(name, 0o755, dir_fd=fd)
            child = os.open(name, _DIR_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)
    return child


def skips_that_run_at_base(base: BaseRun, nodeids: Sequence[str]) -> tuple[str, ...]:
    """Return the node ids (of ``nodeids``, skipped by the suite at the head) that pass at the
    base: the patch made them skip. Raises ``GitError`` when the base cannot be read."""
    wanted = [n for n in nodeids if "::" in n]
    if not wanted:
        return ()
    run = _run_at_base(base, wanted)
    return run.ids(PASSED)


def failures_at_base(
    base: BaseRun, nodeids: Sequence[str], uncollected: frozenset[str] = frozenset()
) -> tuple[str, ...]:
    """Return the node ids (of ``nodeids``, failed at the head) that fail at the base as well:
    the base collects and fails them, or (for ``uncollected``: ids the head's run did not
    collect although its selection did) the base does not collect them either, so the id
    itself is unstable (computed from a random number or a process id). Any other node the
    base does not have is the patch's own. Raises ``GitError`` when the base cannot be read."""
    if not nodeids:
        return ()
    run = _run_at_base(base, nodeids)
    collected = set(run.collected)
    broken = {e.nodeid for e in run.collect_errors}
    return tuple(
        n
        for n in sorted(run.results)
        if run.results[n].outcome == FAILED
        and (
            n in collected
            or n in broken
            or n.split("::", 1)[0] in broken
            or (n in uncollected and n not in collected)
        )
    )


def environment_faults(base: BaseRun, errors: Sequence[CollectError]) -> list[CollectError]:
    """Return the collection errors (missing modules) that the base has too.

    Only errors that name a missing module are candidates; each file is collected at the
    base, and it is the environment's fault when the base fails the same way. A file the
    patch added, or one that imports at the base, is the patch's failure (not returned).
    """
    candidates = [e for e in errors if e.missing is not None and "::" not in e.nodeid]
    if not candidates:
        return []
    # A file's own id runs all of its tests; one the base lacks reports no collection error.
    ids = [e.nodeid for e in candidates]
    run = _run_at_base(base, ids)
    at_base = {e.nodeid: e for e in run.collect_errors}
    return [e for e in candidates if e.nodeid in at_base and at_base[e.nodeid].missing == e.missing]


def collects_at_base(
    base: BaseRun, paths: Sequence[str], test_roots: Sequence[str]
) -> frozenset[str]:
    """Return the paths (of ``paths``: test files or directories that do not collect at the
    head) that the base has and collects without an error: the patch broke them (a new test
    file whose module name clashes with theirs, a package ``__init__`` that now raises), so
    the full suite at the head fails on them. Raises ``GitError`` when the base cannot be
    read; a base pytest cannot collect at all collects none of them."""
    with tempfile.TemporaryDirectory(prefix="patchlane-base-collect-") as tmp:
        tree = Path(tmp) / "tree"
        materialise(base.repo, base.merge_base, tree)
        present = [p for p in paths if to_fs(tree, p).exists()]
        roots = [r for r in test_roots if to_fs(tree, r).exists()]
        if not present or not roots:
            return frozenset()
        built(base.build, tree, "base")
        try:
            found = collect(
                tree,
                roots,
                timeout_s=base.timeout_s,
                env=child_env(base.hash_seed),
                only_files=present,
            )
        except CollectionError:
            return frozenset()
    broken = {e.nodeid for e in found.errors}
    return frozenset(p for p in present if p not in broken)


def base_collects_suite(base: BaseRun, test_roots: Sequence[str]) -> bool:
    """Return whether pytest collects the base's suite (``test_roots`` at ``merge_base``)
    without failing as a whole: when it does and the head's collection failed as a whole,
    the patch's code ended it (docs/architecture.md §2, "A patch that kills collection").
    A base with none of the roots collects nothing and says ``False``. Raises ``GitError``
    when the base cannot be read, ``BuildFailed`` when its build fails."""
    with tempfile.TemporaryDirectory(prefix="patchlane-base-collect-") as tmp:
        tree = Path(tmp) / "tree"
        materialise(base.repo, base.merge_base, tree)
        roots = [r for r in test_roots if to_fs(tree, r).exists()]
        if not roots:
            return False
        built(base.build, tree, "base")
        try:
            collect(tree, roots, timeout_s=base.timeout_s, env=child_env(base.hash_seed))
        except CollectionError:
            return False
    return True


def _run_at_base(base: BaseRun, nodeids: Sequence[str]) -> TestRun:
    """Run ``nodeids`` on the base commit, in a detached checkout of it as the head's run
    has (``git.checkout_detached``: ``.git`` present), so a node runs the same way on both
    sides; built with ``build`` first (``BuildFailed`` when that fails)."""
    with tempfile.TemporaryDirectory(prefix="patchlane-base-run-") as tmp:
        tree = Path(tmp) / "tree"
        checkout_base(base, tree)
        return run_tests(tree, nodeids=nodeids, hash_seed=base.hash_seed, timeout_s=base.timeout_s)


def checkout_base(base: BaseRun, tree: Path) -> None:
    """Make ``tree`` a detached checkout of the merge base, shown at the repository's path
    (``infra.origins``) and built. Raises ``GitError``, ``BuildFailed``."""
    repo, merge_base = base.repo, base.merge_base
    git.checkout_detached(repo, merge_base, tree, branch=git.branch_for(repo, merge_base))
    sandbox.judged(tree, repo)
    built(base.build, tree, "base")


def _tree(repo: Path, commit: str, tree: Path, build: Build | None, where: str) -> Path:
    """Return ``tree`` with ``commit`` materialised in it and built with ``build`` (``where``
    names it). Raises ``GitError``, ``BuildFailed``."""
    materialise(repo, commit, tree)
    sandbox.judged(tree, repo)  # shown at the repository's path (infra.origins)
    built(build, tree, where)
    return tree


def fault_message(fault: CollectError) -> str:
    """One line for an environment fault: the file, the package and the fix."""
    package = (fault.missing or "").split(".", 1)[0]
    return (
        f"{fault.nodeid}: cannot import {fault.missing!r} at the base and the head alike: the "
        f"replay environment lacks the package; install it where patchlane runs "
        f"(pip install {package}) and gate again"
    )
