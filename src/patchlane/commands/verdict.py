"""``patchlane verdict``: apply DESIGN.md §1's reading order to lane reports."""

from __future__ import annotations

import argparse
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
    p.add_argument("--property-report", type=Path, required=True, metavar="FILE")
    p.add_argument("--fixture-report", type=Path, required=True, metavar="FILE")
    p.add_argument("--freeze-report", type=Path, required=True, metavar="FILE")
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
    from patchlane.gate.reports import load_classification, load_lane_report
    from patchlane.gate.verdict import decide

    _, prop = load_lane_report(args.property_report, "property")
    _, fixture = load_lane_report(args.fixture_report, "fixture")
    _, freeze = load_lane_report(args.freeze_report, "freeze")
    replay = load_lane_report(args.replay_report, "replay")[1] if args.replay_report else None
    facts = load_classification(args.classify)[1] if args.classify else None
    verdict = decide(prop, fixture, freeze, replay, facts)
    data = verdict.to_json()

    def summary() -> None:
        ctx.out.say(f"verdict: {verdict.verdict}")
        for reason in verdict.reasons:
            ctx.out.say(f"  rule {reason.rule} [{reason.lane}] {reason.effect}: {reason.message}")

    publish(ctx.out, data, args.out, summary)
    return verdict.exit_code
