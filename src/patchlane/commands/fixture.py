"""``patchlane fixture check|lock``: compare fixture bytes with their locks, or write locks."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchlane.commands.options import publish
from patchlane.errors import Exit, MapError, UsageError
from patchlane.infra.ui import show, write_stdout

if TYPE_CHECKING:
    from patchlane.lanes.fixture.lane import FixtureReport
    from patchlane.main import Context
    from patchlane.project.config import FixtureLane


def register(sub: Any, name: str, help_text: str, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``fixture`` with its actions ``check`` and ``lock`` to the sub-parsers."""
    p = sub.add_parser(
        name,
        help=help_text,
        parents=parents,
        description="Compare the bytes under each fixture root of the review map with the "
        "root's lock (a reviewed list of SHA-256 hashes), or write new locks.",
    )
    # The same parser class as ours, so a bad action also exits 2 with one line.
    actions = p.add_subparsers(dest="fixture_command", metavar="ACTION", parser_class=type(p))
    actions.required = True
    check = actions.add_parser(
        "check",
        help="compare the fixture bytes with the locks",
        parents=parents,
        description="Hash every file under each fixture root and compare with the root's "
        "lock. Exit 0 when every file matches, 1 when a file is missing, extra, changed or "
        "unsafe (symlink, FIFO, socket, device, case collision) or a lock update breaks a "
        "rule, 2 when a lock cannot be read.",
    )
    check.add_argument(
        "--no-cache", action="store_true", help="rehash everything; use no stat cache"
    )
    check.add_argument("--out", metavar="FILE", help="write fixture-report.json here")
    check.add_argument(
        "--base",
        metavar="REF",
        help="judge lock updates against the merge base with REF: a changed lock needs a new "
        "one-line reason",
    )
    check.add_argument(
        "--rev",
        metavar="REF",
        help="check the bytes and locks stored in this commit instead of the work tree",
    )
    lock = actions.add_parser(
        "lock",
        help="write a new lock for each fixture root",
        parents=parents,
        description="Hash the work tree's fixture roots and write each lock (files sorted "
        "by path, with the reason and the UTC time). Refuses roots holding symlinks, FIFOs, "
        "sockets, devices, case collisions or JSON that cannot be canonicalised.",
    )
    lock.add_argument("--reason", required=True, help="why the bytes changed (one line, required)")
    lock.add_argument("--root", metavar="LOCKPATH", help="write only the lock at this path")


def run(args: argparse.Namespace, ctx: Context) -> int:
    """Run ``fixture check`` or ``fixture lock``; return the exit code (0 green, 1 red).

    Raises ``PatchlaneError`` (exit 2 at the boundary) for a bad map, lock or ref.
    """
    if args.fixture_command == "lock":
        return _run_lock(args, ctx)
    return _run_check(args, ctx)


def _load_lane(repo: Path, ctx: Context) -> FixtureLane:
    """Return the fixture lane of the work tree's review map. Raises ``MapError``."""
    from patchlane.project.classify import load_map_file, map_path_in_repo
    from patchlane.project.config import DEFAULT_MAP

    rel, outside = map_path_in_repo(repo, ctx.map_option)
    if outside is not None:
        review_map = load_map_file(outside)
    else:
        rel = rel or DEFAULT_MAP  # map_path_in_repo gives one of the two
        review_map = load_map_file(repo / rel, rel)
    if review_map.fixture is None:
        raise MapError(
            review_map.label, "no fixture lane (lanes.fixture): nothing to check or lock"
        )
    return review_map.fixture


def _run_check(args: argparse.Namespace, ctx: Context) -> int:
    from patchlane.infra import git
    from patchlane.lanes.fixture.lane import check_commit, check_worktree

    repo = ctx.repo()
    lane = _load_lane(repo, ctx)
    commit = git.resolve_commit(repo, args.rev) if args.rev else None
    base_commit: str | None = None
    changed: frozenset[str] = frozenset()
    if args.base:
        base = git.resolve_commit(repo, args.base)
        head = commit if commit is not None else git.resolve_commit(repo, "HEAD")
        base_commit = git.merge_base(repo, base, head)
        changed = frozenset(
            p for c in git.diff_changes(repo, base_commit, head) for p in (c.path, c.old_path) if p
        )
    if commit is not None:
        report = check_commit(repo, commit, lane, base_commit=base_commit, changed=changed)
    else:
        report = check_worktree(
            repo,
            lane,
            use_cache=not args.no_cache,
            base_commit=base_commit,
            changed=changed,
            out=ctx.out,
        )
    data = report.to_json()
    publish(ctx.out, data, args.out, lambda: print_summary(report, ctx))
    return Exit.GREEN if report.ok else Exit.RED


def print_summary(report: FixtureReport, ctx: Context) -> None:
    """Print the human summary of a fixture report (every path through ``ui.show``)."""
    out = ctx.out
    where = "work tree" if report.commit is None else f"commit {report.commit[:12]}"
    out.say(f"fixture: {out.paint(report.status)} ({where}): {show(report.reason)}")
    for root in report.roots:
        note = ""
        if root.lock_changed:
            note = f", changed (reason: {show(root.lock_reason or '(none)')})"
        out.say(f"  lock {show(root.lock)}: {root.files} files{note}")
    for label, paths in (
        ("changed", report.changed),
        ("missing", report.missing),
        ("extra", report.extra),
    ):
        for path in paths:
            out.say(f"  {label}: {show(path)}")
    for u in report.unsafe:
        out.say(f"  unsafe: {show(u.path)} ({show(u.problem)})")
    for a, b in report.case_collisions:
        out.say(f"  case collision: {show(a)} and {show(b)}")
    for e in report.lock_errors:
        out.say(f"  lock error: {show(e.lock)}: {show(e.problem)}")
    for update in report.lock_updates:
        out.say(f"  lock update: {show(update.lock)}: {show(update.reason or '')}")
    # Shown, not an exit code: the bytes git stores matched (or not); the gate turns these
    # into ``undecided`` (docs/explanation/decisions/0006-fixture-locks.md).
    for event in report.review_events:
        out.say(f"  to review: {show(event)}")
    t = report.timings
    out.debug(
        f"fixture: {t.seconds:.3f} s, {t.hashed} files hashed, {t.cached} from the stat cache"
    )


def _run_lock(args: argparse.Namespace, ctx: Context) -> int:
    from patchlane.inputs.jsonio import dumps_report
    from patchlane.lanes.fixture.lane import write_locks
    from patchlane.lanes.fixture.lockfile import reason_problem

    problem = reason_problem(args.reason)
    if problem:
        raise UsageError(f"--reason {problem}")
    repo = ctx.repo()
    lane = _load_lane(repo, ctx)
    written = write_locks(repo, lane, args.reason, only=args.root, out=ctx.out)
    if ctx.out.json:
        write_stdout(dumps_report({"written": [{"lock": lock, "files": n} for lock, n in written]}))
    for lock, n in written:
        ctx.out.say(f"wrote {show(lock)} ({n} files)")
    return Exit.GREEN
