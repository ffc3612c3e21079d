"""The replay lane and compiled code (docs/architecture.md §2, "Compiled code").

Without the map's ``lanes.replay.build``, a patch that changes compiled code is replayed
against whatever build the tree's imports find (the base's): a review event, so
``undecided``. With it, the build runs in every materialised tree; a build that fails at the
head is the patch's only when it succeeds at the base, and one that fails at both is this
machine's (exit 2).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from patchlane.errors import EnvironmentFault
from patchlane.formats.replay_report import ReplayOutcome, ReplayReport
from patchlane.formats.status import Status
from patchlane.infra import git
from patchlane.infra.tree import materialise
from patchlane.infra.ui import show
from patchlane.project.build import Build, BuildResult, compiled_changes, run_build
from patchlane.project.classify import Classification

COMPILED_SOURCE = "compiled source changed: replay would run the base's build"
BUILD_FAILED = ReplayOutcome.BUILD_FAILED
_SHOWN = 5


def build_of(cls: Classification) -> Build | None:
    """The build command of the map that decides (the base's), or ``None``."""
    return Build.of(cls.patch.review_map.replay)


def compiled_events(repo: Path, cls: Classification) -> tuple[str, ...]:
    """The review events compiled code in the patch raises: without a build command, a
    changed compiled source or build configuration; with one or without, a changed committed
    binary (the build may not produce it, so its bytes are the patch's, unreviewable).
    Raises ``GitError`` when a commit cannot be listed."""

    def tracked() -> list[str]:
        return [
            e.path for commit in (cls.merge_base, cls.head) for e in git.ls_tree(repo, commit, [])
        ]

    found = compiled_changes(cls.changed_paths, tracked)
    events: list[str] = []
    if found.sources and build_of(cls) is None:
        events.append(
            f"{COMPILED_SOURCE} ({_names(found.sources)}); name the command that builds it "
            "in the base's map (lanes.replay.build, e.g. \"python setup.py build_ext "
            '--inplace") so that the replay rebuilds the head'
        )
    if found.binaries:
        events.append(
            f"compiled binary changed ({_names(found.binaries)}): the replay runs the patch's "
            "bytes, which no build from reviewed sources vouches for; a person must look"
        )
    return tuple(events)


def wrote_events(result: BuildResult | None) -> tuple[str, ...]:
    """A review event when the head's build added, changed or removed files that are not
    build products: the tests load a tree the diff never showed."""
    if result is None or not result.wrote:
        return ()
    return (
        f"the build command wrote {len(result.wrote)} file(s) at the head that are not build "
        f"products ({_names(result.wrote)}): the tests ran a tree the diff does not show",
    )


def judge_build_failure(
    repo: Path, cls: Classification, mode: str, result: BuildResult
) -> ReplayReport:
    """The replay report for a build that failed (``result``).

    At the head: the build runs at the base too; when it succeeds there the patch broke the
    build (the full suite cannot run at the head): ``fail``. At the base (a check there),
    after the head's built: no evidence (``error``). Raises ``EnvironmentFault`` when it
    fails at the base and the head alike, ``GitError`` when the base cannot be read."""
    build = build_of(cls)
    if result.where != "head" or build is None:
        return ReplayReport(
            Status.ERROR,
            f"{result.failure()}, after it built the head: the checks at the base cannot run, "
            "so the replay is no evidence",
            outcome=BUILD_FAILED,
            mode=mode,
        )
    with tempfile.TemporaryDirectory(prefix="patchlane-build-base-") as tmp:
        tree = Path(tmp) / "tree"
        materialise(repo, cls.merge_base, tree)
        at_base = run_build(build, tree, "base")
    if not at_base.ok:
        raise EnvironmentFault(
            f"{cls.patch.review_map.label}: lanes.replay.build fails at the base and the head "
            f"alike ({at_base.failure()}): the build runs in the sandbox without a network, so "
            "one that downloads (a build backend, a dependency) fails there; install what it "
            "needs where patchlane runs, or fix the command, and gate again"
        )
    return ReplayReport(
        Status.FAIL,
        f"{result.failure()}, and it succeeds at the base: the patch breaks the build, so the "
        "full suite cannot run at the head",
        outcome=BUILD_FAILED,
        mode=mode,
    )


def _names(paths: tuple[str, ...]) -> str:
    shown = ", ".join(show(p) for p in paths[:_SHOWN])
    return shown + (f" and {len(paths) - _SHOWN} more" if len(paths) > _SHOWN else "")
