"""Uncommitted changes: the gate judges commits, so it says so when the work tree holds more.

Every lane reads the head commit's bytes (docs/architecture.md §1: the patch is
``merge-base(base, head)..head``), never the work tree. A user who edits files and runs the
gate on ``HEAD`` would otherwise get a verdict about something else than what they see: the
commits without their edits, or, when nothing is committed yet, "the patch changes no file".
So, when the head is the work tree's ``HEAD`` and the work tree holds changes to tracked
files (or untracked files under a path a lane covers):

- ``HEAD`` adds nothing to the base (it is the merge base): there is no patch to judge, and
  the edits are surely what the user meant; that is a usage error (exit 2) saying how to
  gate them, rather than an ``undecided`` that reads like a verdict on them;
- ``HEAD`` holds commits of its own: those are judged, as asked, and a note on stderr lists
  the changes left out and how to include them.

The way to include them is printed as a command that works as shown: ``git diff --binary``
against the merge base, piped into ``gate --patch -`` on that same commit.

``replay run`` is stricter (``first_difference``): it runs the slice in the work tree it
stands in and names that tree's ``HEAD`` in the receipt, so a work tree that holds anything
``HEAD`` does not (an uncommitted fix, an untracked ``conftest.py``) would vouch for a
commit it did not test; it refuses instead (docs/architecture.md §2, "Replay outcomes").
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from patchlane.errors import UsageError
from patchlane.infra import git
from patchlane.project.classify import (
    control_kinds,
    deciding_map,
    lanes_for,
    property_module_prefixes,
)

SHOWN = 4  # entries listed before "and N more"
# The gate's default evidence directory: it writes there before a replay command runs.
EVIDENCE_DIR = ".patchlane/"


@dataclass(frozen=True)
class GateCommand:
    """How the user ran the gate, to print the command that gates their edits instead:
    ``repo_option`` (``--repo``, also where ``git -C`` runs), ``base`` as they spelled it,
    ``options`` (global options before ``gate``) and ``gate_options`` (after ``--base``)."""

    repo_option: str | None
    base: str
    options: tuple[str, ...] = ()
    gate_options: tuple[str, ...] = ()

    def patch_command(self, base: str) -> str:
        """Return ``git diff --binary BASE | patchlane ... gate --base BASE --patch - ...``."""
        git_part = ["git"] + (["-C", self.repo_option] if self.repo_option else [])
        git_part += ["diff", "--binary", base]
        gate = ["patchlane", *self.options, "gate", "--base", base, "--patch", "-"]
        return f"{shlex.join(git_part)} | {shlex.join([*gate, *self.gate_options])}"


def check_worktree(
    repo: Path, head_ref: str, map_option: str | None, command: GateCommand
) -> str | None:
    """Look for uncommitted changes when ``head_ref`` is the work tree's ``HEAD``: changes
    to tracked files, and untracked files the deciding map gives a lane or a control kind.

    Returns a note for stderr when ``HEAD`` has commits of its own and the work tree holds
    more, or when ``HEAD`` adds nothing to the base and the work tree is clean (no patch at
    all), else ``None``. Raises ``UsageError`` when ``HEAD`` adds nothing to the base and
    the work tree holds changes (there is no commit to judge), ``GitError`` for an unknown
    ref, ``MapError`` for a malformed map.
    """
    head = git.resolve_commit(repo, head_ref)
    if head_ref != "HEAD" and head != git.resolve_commit(repo, "HEAD"):
        return None  # the user named another commit: the work tree is not in question
    entries = git.worktree_changes(repo)
    base = git.resolve_commit(repo, command.base)
    merge_base = git.merge_base(repo, base, head)
    changes = [e for e in entries if e[0] != "??"]
    untracked = [path for code, path in entries if code == "??"]
    if untracked:
        # An untracked file matters where the map looks (a stray notes.txt does not).
        matters = _covered(repo, map_option, base, head)
        changes += [("??", path) for path in untracked if matters(path)]
    if not changes:
        return _no_patch(head, command.base) if head == merge_base else None
    # The diff against the merge base applies to it by construction; the base's own
    # spelling reads better and is the same commit whenever the base has not moved on.
    spelled = command.base if merge_base == base else merge_base[:12]
    listed = _listed(changes)
    how = f"commit them, or gate them as a patch: {command.patch_command(spelled)}"
    if any(code == "??" for code, _ in changes):
        how += " (git add -N the untracked files first, so that git diff shows them)"
    if head == merge_base:
        raise UsageError(
            f"HEAD ({head[:12]}) adds no commit to {command.base}: the gate judges commits, "
            f"and your changes are not committed ({listed}); {how}"
        )
    return (
        f"note: the gate judges commits: HEAD ({head[:12]}) is judged without the work "
        f"tree's uncommitted changes ({listed}); {how}"
    )


def first_difference(repo: Path, exempt: Iterable[str] = ()) -> tuple[str, str] | None:
    """Return the first ``(git status code, path)`` by which the work tree of ``repo``
    differs from its ``HEAD`` (``git.worktree_changes``: tracked changes, staged or not, and
    untracked files git does not ignore), or ``None`` when it holds nothing more.

    Entries under patchlane's evidence directory (``.patchlane/``) and the repository paths
    ``exempt`` (the files a ``replay run`` was told to read or write) are not differences:
    the gate writes them there. Raises ``GitError`` when ``git status`` fails (never taken
    for a clean tree).
    """
    skipped = frozenset(exempt)
    for code, path in git.worktree_changes(repo, strict=True):
        if path.startswith(EVIDENCE_DIR) or path in skipped:
            continue
        return code, path
    return None


def _no_patch(head: str, base: str) -> str:
    """The note for a ``HEAD`` that adds nothing to the base, with nothing in the work tree
    the map would look at: the verdict stays (undecided, "the patch changes no file"), but
    "map incomplete" alone reads like a fault of the map."""
    return (
        f"note: HEAD ({head[:12]}) adds no commit to {base} and the work tree holds no change: "
        "there is no patch to judge; check out the branch that holds the agent's commits, "
        "or pass the patch with --patch FILE"
    )


def _listed(changes: list[tuple[str, str]]) -> str:
    shown = ", ".join(f"{code.strip()} {path}" for code, path in changes[:SHOWN])
    more = len(changes) - SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


def _covered(repo: Path, map_option: str | None, base: str, head: str) -> Callable[[str], bool]:
    """Return whether a path is one the deciding map gives a lane or a control kind."""
    source = deciding_map(repo, map_option, base, head, frozenset())
    review_map = source.review_map
    props = property_module_prefixes(review_map)
    rel = source.path if source.source != "file" else None

    def matters(path: str) -> bool:
        return bool(
            lanes_for(path, review_map, props) or control_kinds(path, review_map, rel, props)
        )

    return matters
