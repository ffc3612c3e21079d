"""``patchlane freeze audit``: audit the freeze registry of flaky-test freezes."""

from __future__ import annotations

import argparse
import re
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchlane.commands.options import add_diff_options, base_ref, publish
from patchlane.errors import Exit
from patchlane.infra.ui import one_line, show

if TYPE_CHECKING:
    from patchlane.formats.freeze_report import FreezeReport
    from patchlane.main import Context

_DATE_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


def review_date(text: str) -> date:
    """argparse type for ``--today``: exactly ``YYYY-MM-DD``, a real calendar day.

    (Python 3.11's ``date.fromisoformat`` also takes ``20261008`` and week dates, which a
    review date written by a person never is.)
    """
    try:
        if _DATE_RE.match(text):
            return date.fromisoformat(text)
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"{text!r} is not a date (YYYY-MM-DD)")


def register(sub: Any, name: str, help_text: str, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``freeze`` with its action ``audit`` to the sub-parsers."""

    p = sub.add_parser(
        name,
        help=help_text,
        parents=parents,
        description="Audit the freeze registry: named exceptions that let one flaky test "
        "assertion be skipped on the replay host until it expires.",
    )
    # The same parser class as ours, so a bad action also exits 2 with one line.
    actions = p.add_subparsers(dest="freeze_command", metavar="ACTION", parser_class=type(p))
    actions.required = True
    audit = actions.add_parser(
        "audit",
        help="audit every record of the base's freeze registry (rules 1-6)",
        parents=parents,
        description="Audit every record of the base's freeze registry by rules 1-6: (1) "
        "'expires' is set, not past and within max_age_days of --today; (2) required "
        "properties are listed; (3) each of them passed; (4) the record's fixture lock "
        "passed; (5) in play: the patch changes the test's file or the node id is in the "
        "failure log; (6) 'expires' was extended only with a new failure log and at most "
        "max_extensions times (from git history). A record not in play skips nothing and cannot "
        "turn the lane red. Records the patch adds or changes are listed and never count. "
        "Exit 0 when no in-play record fails, 1 when one does, 2 for bad input.",
    )
    add_diff_options(audit)
    audit.add_argument(
        "--today",
        type=review_date,
        metavar="YYYY-MM-DD",
        help="review date for expiry (default: today, UTC)",
    )
    audit.add_argument(
        "--property-report", type=Path, required=True, metavar="FILE", help="property-report.json"
    )
    audit.add_argument(
        "--fixture-report", type=Path, required=True, metavar="FILE", help="fixture-report.json"
    )
    audit.add_argument(
        "--failure-log",
        type=Path,
        metavar="FILE",
        help="the last run's failures: pytest JUnit XML, or text with FAILED/ERROR lines",
    )
    audit.add_argument("--out", metavar="FILE", help="write freeze-report.json here")


def run(args: argparse.Namespace, ctx: Context) -> int:
    """Run ``freeze audit``; return 0 when no in-play record fails, 1 otherwise.

    Raises ``PatchlaneError`` (exit 2 at the boundary) for a bad map, registry, report,
    failure log or ref.
    """
    from patchlane.formats.fixture_report import FixtureReport
    from patchlane.formats.property_report import PropertyReport
    from patchlane.lanes.freeze.failure_log import read_failure_log
    from patchlane.lanes.freeze.lane import audit
    from patchlane.project.classify import classify

    # The files named on the command line first: a typo is reported before git is asked.
    prop = PropertyReport.read(args.property_report)
    fixture = FixtureReport.read(args.fixture_report)
    failed = read_failure_log(args.failure_log) if args.failure_log else frozenset()
    today = args.today if args.today is not None else datetime.now(UTC).date()

    repo = ctx.repo()
    # The same refs, merge base, changed paths and deciding map as every other lane.
    patch = classify(repo, base_ref(repo, args.base), args.head, ctx.map_option).patch
    report = audit(
        repo,
        patch,
        today=today,
        property_report=prop,
        fixture_report=fixture,
        failure_log=failed,
    )
    data = report.to_json()
    publish(ctx.out, data, args.out, lambda: print_summary(report, ctx))
    return Exit.GREEN if report.ok else Exit.RED


def print_summary(report: FreezeReport, ctx: Context) -> None:
    """Print the human summary: the lane's line, then each record with in_play, ok and the
    rules it fails (with why), then the patch's own registry changes and what may be
    skipped. Paths and node ids go through ``ui.show``."""
    out = ctx.out
    out.say(f"freeze: {out.paint(report.status)}: {one_line(report.reason)}")
    if report.registry is not None:
        out.say(f"registry: {show(report.registry)} ({report.registry_source}), {report.today}")
    for r in report.records:
        rules = ", ".join(str(n) for n in r.failed_rules) or "none"
        expires = r.expires.isoformat() if r.expires else "none"
        out.say(
            f"  {r.id} {show(r.nodeid)}: in_play={str(r.in_play).lower()} "
            f"ok={str(r.ok).lower()} failed_rules={rules} (expires {expires})"
        )
        for n in r.failed_rules:
            out.say(f"    rule {n}: {one_line(r.details[n - 1])}")
    for label, ids in (
        ("added by the patch (inert)", report.added_by_patch),
        ("changed by the patch (the base's version is judged)", report.changed_by_patch),
        ("removed by the patch (still in force at base)", report.removed_by_patch),
    ):
        if ids:
            out.say(f"{label}: {', '.join(ids)}")
    if report.head_registry_problem:
        out.say(f"patch's registry: {one_line(report.head_registry_problem)}")
    for note in report.notes:
        out.say(f"note: {one_line(note)}")
    skippable = ", ".join(show(n) for n in report.skippable) or "nothing"
    out.say(f"skippable: {skippable}")
    out.debug(f"freeze: {report.seconds:.3f} s, {report.history_versions} registry versions read")
