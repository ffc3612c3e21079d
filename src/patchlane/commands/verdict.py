"""``patchlane verdict``: apply the reading order of docs/architecture.md §1 to lane reports."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchlane.commands.options import publish

if TYPE_CHECKING:
    from patchlane.main import Context


def register(sub: Any, name: str, help_text: str, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        name,
        help=help_text,
        parents=parents,
        description="Read the lane reports in the fixed order (property, fixture, freeze, "
        "replay, map coverage, missing evidence) and write verdict.json. Without --classify "
        "the map's coverage and harness changes are unknown, so the verdict cannot be "
        "accept_for_review. Exit 0 accept_for_review, 1 reject, 3 undecided.",
    )
    for lane, command in (("property", "property"), ("fixture", "fixture check"),
                          ("freeze", "freeze audit")):  # fmt: skip
        p.add_argument(
            f"--{lane}-report",
            type=Path,
            required=True,
            metavar="FILE",
            help=f"{lane}-report.json, as 'patchlane {command} --out' or 'gate' writes it",
        )
    p.add_argument(
        "--replay-report", type=Path, metavar="FILE", help="absent: replay not run (undecided)"
    )
    p.add_argument(
        "--classify",
        type=Path,
        metavar="FILE",
        help="classify.json (map coverage, harness changes)",
    )
    p.add_argument("--out", type=Path, metavar="FILE", help="write verdict.json here")


def run(args: argparse.Namespace, ctx: Context) -> int:
    """Run ``verdict``; return its exit code (0 accept_for_review, 1 reject, 3 undecided).

    Raises ``ReportError`` (exit 2 at the boundary) for a report or classification that
    cannot be read or is not well formed.
    """
    from patchlane.formats.fixture_report import FixtureReport
    from patchlane.formats.freeze_report import FreezeReport
    from patchlane.formats.property_report import PropertyReport
    from patchlane.formats.replay_report import ReplayReport
    from patchlane.gate.review import summary_reasons
    from patchlane.gate.verdict import decide
    from patchlane.project.classify import ClassificationSummary

    prop = PropertyReport.read(args.property_report)
    fixture = FixtureReport.read(args.fixture_report)
    freeze = FreezeReport.read(args.freeze_report)
    replay = ReplayReport.read(args.replay_report) if args.replay_report else None
    summary = ClassificationSummary.read(args.classify) if args.classify else None
    verdict = decide(prop, fixture, freeze, replay, None if summary is None else summary.facts)
    if replay is not None and not replay.skipped:
        verdict = dataclasses.replace(verdict, canary=replay.canary)  # as the gate writes it
    data = verdict.to_json()

    def summary_lines() -> None:
        ctx.out.say(f"verdict: {ctx.out.paint(verdict.verdict)}")
        for reason in summary_reasons(verdict, replay):
            ctx.out.say(f"  rule {reason.rule} [{reason.lane}] {reason.effect}: {reason.message}")

    publish(ctx.out, data, args.out, summary_lines)
    return verdict.exit_code
