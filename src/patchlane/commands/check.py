"""``patchlane check``: validate the review map, the freeze registry and every lock."""

from __future__ import annotations

import argparse
import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchlane.commands.freeze import review_date
from patchlane.errors import Exit, MapError
from patchlane.infra.ui import one_line, show, write_stdout

if TYPE_CHECKING:
    from patchlane.gate.validate import CheckResult
    from patchlane.main import Context


def register(sub: Any, name: str, help_text: str, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``check`` to the sub-parsers."""

    p = sub.add_parser(
        name,
        help=help_text,
        parents=parents,
        description="Validate the control files without running anything (for pre-commit "
        "hooks and CI): the review map, and that every path it names (lane paths, test "
        "roots, node ids' files, ignore entries) names something in the work tree or the "
        "--rev commit and is no placeholder such as PACKAGE/; the freeze registry, every record (the audit's rules "
        "1 and 2, and whether rules 3 and 4 can hold: each required property is a prop_* "
        "function of a property module, each fixture_lock a lock of the map); every fixture "
        "lock; and the fixture bytes against their locks, as 'fixture check' does. Every "
        "problem is printed, one line each (FILE:LINE: what). Rules 5 and 6 need the patch "
        "and the registry's history: 'freeze audit' and 'gate' apply them. Exit 0 when all "
        "is well, 1 for a red finding (a fixture file that differs from its lock, a freeze "
        "record that fails a rule), 2 when a file cannot be read as what it should be.",
    )
    p.add_argument(
        "--rev",
        metavar="REF",
        help="check the files stored in this commit instead of the work tree (property "
        "modules are then not read)",
    )
    p.add_argument(
        "--no-fixtures",
        action="store_true",
        help="do not compare the fixture bytes with their locks (the locks are still read)",
    )
    p.add_argument(
        "--no-cache", action="store_true", help="rehash every fixture file; use no stat cache"
    )
    p.add_argument(
        "--today",
        type=review_date,
        metavar="YYYY-MM-DD",
        help="review date for the freeze expiry rule (default: today, UTC)",
    )


def run(args: argparse.Namespace, ctx: Context) -> int:
    """Run ``check``; return 0 when clean, 1 for a red finding, 2 for bad input."""
    from patchlane.gate.validate import check

    repo = _repo(ctx)
    commit = None
    if args.rev:
        from patchlane.infra import git

        commit = git.resolve_commit(repo, args.rev)
    today = args.today if args.today is not None else datetime.now(UTC).date()
    result = check(
        repo,
        ctx.map_option,
        today=today,
        commit=commit,
        fixtures=not args.no_fixtures,
        use_cache=not args.no_cache,
    )
    result = _with_map_paths(repo, result)
    if ctx.out.json:
        from patchlane.inputs.jsonio import dumps_report

        write_stdout(dumps_report(result.to_json()))
    else:
        _print(result, ctx)
    if result.status == "error":
        return Exit.BAD_INPUT
    return Exit.RED if result.status == "fail" else Exit.GREEN


def _with_map_paths(repo: Path, result: CheckResult) -> CheckResult:
    """``result`` with a problem for each map path that is a placeholder or names nothing
    (``check_paths``), when the map was read."""

    from patchlane.commands.check_paths import checked_paths

    label = next((f for f, what in result.checked if what == "review map"), None)
    if label is None:
        return result
    text = _map_text(repo, label, result.commit)
    if text is None:
        return result
    problems, note = checked_paths(repo, label, text, result.commit)
    return dataclasses.replace(
        result,
        problems=tuple(sorted((*result.problems, *problems), key=lambda p: (p.file, p.line or 0))),
        notes=(*result.notes, *([note] if note else [])),
    )


def _map_text(repo: Path, label: str, commit: str | None) -> str | None:
    """The text of the map ``check`` has just read and parsed (``None``: gone since)."""
    from patchlane.inputs.committed import read_committed_text
    from patchlane.inputs.paths import to_fs

    try:
        if commit is not None:
            return read_committed_text(repo, commit, label, MapError, "")
        path = Path(label) if Path(label).is_absolute() else to_fs(repo, label)
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError, MapError):
        return None


def _repo(ctx: Context) -> Path:
    """The repository root, found without running git where a ``.git`` marks it (a clean
    check starts no process); otherwise git is asked (and says what is wrong)."""
    from patchlane.infra import git

    start = Path(ctx.repo_option) if ctx.repo_option is not None else Path.cwd()
    if start.is_dir():
        found = git.find_toplevel(start)
        if found is not None:
            return found
    return ctx.repo()


def _print(result: CheckResult, ctx: Context) -> None:
    """Problems one per line on stdout (also with ``-q``), then notes and a summary."""
    for problem in result.problems:
        write_stdout(one_line(str(problem)) + "\n")
    for note in result.notes:
        ctx.out.say(f"note: {one_line(note)}")
    where = "work tree" if result.commit is None else f"commit {result.commit[:12]}"
    files = ", ".join(show(f) for f, _ in result.checked) or "nothing"
    if result.fixture is not None:
        files += f"; fixture bytes: {result.fixture.reason}"
    n = len(result.problems)
    if n == 0:
        ctx.out.say(f"check: pass ({where}): {files}")
    else:
        ctx.out.say(f"check: {result.status} ({where}): {n} problem(s); read: {files}")
    for f, what in result.checked:
        ctx.out.debug(f"checked {show(f)}: {what}")
