"""``patchlane property``: run the property checks with their seed, or re-run one counterexample."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchlane.commands.options import (
    add_property_cache_option,
    property_cache_enabled,
    publish,
    seed_value,
)
from patchlane.errors import Exit
from patchlane.infra.ui import one_line, show
from patchlane.lanes.property import DEFAULT_MUTANTS

if TYPE_CHECKING:
    from patchlane.formats.property_report import Failure, PropertyReport
    from patchlane.main import Context
    from patchlane.project.config import ReviewMap


def register(sub: Any, name: str, help_text: str, parents: list[argparse.ArgumentParser]) -> None:
    """Add ``property`` and its options to the sub-parsers."""
    p = sub.add_parser(
        name,
        help=help_text,
        parents=parents,
        description="Run every prop_* function of the property modules the review map lists, "
        "each module in its own isolated child process (no network, minimal environment, "
        "wall-clock timeout). With --base, each module runs from the base revision and from "
        "the head, against the head's code, and a property fails if either fails; without "
        "it, the work tree is run (no base, oracles from the work tree). --only NAME --case I "
        "re-runs one counterexample. Exit 0 when every property holds, 1 when one fails, "
        "errors or times out.",
    )
    p.add_argument(
        "--seed", type=seed_value, metavar="N", help="seed (default: lanes.property.seed)"
    )
    p.add_argument(
        "--cases", type=int, metavar="N", help="cases per property (default: the map's, else 200)"
    )
    p.add_argument(
        "--base",
        metavar="REF",
        help="also run the base's property modules (oracles the patch cannot weaken)",
    )
    p.add_argument(
        "--head",
        metavar="REF",
        help="the patched revision (default: HEAD with --base, else the work tree)",
    )
    p.add_argument(
        "--mutants",
        type=int,
        default=DEFAULT_MUTANTS,
        metavar="N",
        help=f"mutants per property for the oracle audit (default {DEFAULT_MUTANTS}; 0: none)",
    )
    p.add_argument("--only", metavar="NAME", help="run only the property NAME")
    p.add_argument(
        "--case",
        type=int,
        metavar="I",
        help="with --only: re-run case I (Hypothesis properties re-run with the same seed)",
    )
    p.add_argument("--out", metavar="FILE", help="write property-report.json here")
    add_property_cache_option(p)


def run(args: argparse.Namespace, ctx: Context) -> int:
    """Run the lane; return 0 when every property holds, 1 otherwise.

    Raises ``PatchlaneError`` (exit 2 at the boundary) for a bad map, ref or option, and
    when no seed is given on the command line or in the map.
    """
    from patchlane.errors import MapError, UsageError
    from patchlane.infra.steps import Steps
    from patchlane.lanes.property.lane import PropertyRequest, run_property_lane

    repo = ctx.repo()
    review_map = load_map(repo, ctx, args.base, args.head)
    lane = review_map.property
    if lane is None:
        raise MapError(review_map.label, "no property lane (lanes.property): nothing to run")
    seed = args.seed if args.seed is not None else lane.seed
    if seed is None:
        raise UsageError("no seed: pass --seed N or set lanes.property.seed in the review map")
    cases = args.cases if args.cases is not None else lane.cases
    head = args.head if args.head is not None else ("HEAD" if args.base is not None else None)
    request = PropertyRequest(
        seed=seed,
        cases=cases,
        mutants=args.mutants,
        only=args.only,
        case=args.case,
        result_cache=property_cache_enabled(args.property_cache),
    )
    with Steps(ctx.out).step("property lane"):  # said on stderr once it runs a while
        report = run_property_lane(
            repo, review_map, request, base=args.base, head=head, out=ctx.out
        )
    data = report.to_json()
    publish(ctx.out, data, args.out, lambda: print_summary(report, ctx, args))
    return Exit.GREEN if report.ok else Exit.RED


def load_map(repo: Path, ctx: Context, base: str | None, head: str | None) -> ReviewMap:
    """Return the map that decides: the base's with ``--base`` (else the head's), the head
    commit's with ``--head`` alone, the work tree's otherwise. Raises ``MapError``."""
    from patchlane.errors import MapError
    from patchlane.infra import git
    from patchlane.project.classify import (
        deciding_map,
        load_map_at,
        load_map_file,
        map_path_in_repo,
    )
    from patchlane.project.config import DEFAULT_MAP

    if base is not None:
        base_commit = git.resolve_commit(repo, base)
        head_commit = git.resolve_commit(repo, head or "HEAD")
        source = deciding_map(repo, ctx.map_option, base_commit, head_commit, frozenset())
        return source.review_map
    rel, outside = map_path_in_repo(repo, ctx.map_option)
    if outside is not None:
        return load_map_file(outside)
    rel = rel or DEFAULT_MAP
    if head is None:
        return load_map_file(repo / rel, rel)
    found = load_map_at(repo, git.resolve_commit(repo, head), rel, "head")
    if found is None:
        raise MapError(rel, f"no review map in {head}")
    return found


def print_summary(report: PropertyReport, ctx: Context, args: argparse.Namespace) -> None:
    """Print the human summary: the verdict line, each failure with its counterexample and
    the command that re-runs it, then the oracle findings and kill ratios."""
    out = ctx.out
    out.say(f"property: {out.paint(report.status)}: {one_line(report.reason)}")
    for failure in report.failures:
        out.say(_failure_line(failure, args))
        out.say(f"    {one_line(failure.message)}")
        if failure.case_index is not None or failure.kind in ("assertion", "error"):
            out.say(f"    re-run: {rerun_command(failure, report, args)}")
    for finding in report.oracle_findings:
        out.say(
            f"  oracle: {finding.property} ({finding.module}): {finding.kind}: "
            f"{one_line(finding.detail)}"
        )
    for m in report.mutation:
        if m.error is not None:
            out.say(f"  mutation: {m.property} ({m.module}): not measured: {one_line(m.error)}")
        else:
            out.say(f"  mutation: {m.property} ({m.module}): killed {m.killed} of {m.mutants}")
    if report.oracle_audit != "ran":
        out.debug(f"oracle audit: {report.oracle_audit}")


def _failure_line(failure: Failure, args: argparse.Namespace) -> str:
    where = f"{failure.module}, {failure.source}"
    case = ""
    if failure.case_index is not None:
        case = f" case {failure.case_index}"
        if args.case is not None and failure.case_index != args.case:
            case += f" (before case {args.case}: cases run in order)"
    arguments = ""
    if failure.arguments is not None:
        import json

        arguments = f" arguments {json.dumps(failure.arguments, ensure_ascii=False)}"
    kind = {"assertion": "FAIL"}.get(failure.kind, failure.kind.upper())
    return f"  {kind} {show(failure.property)} [{where}]{case}{one_line(arguments)}"


def rerun_command(failure: Failure, report: PropertyReport, args: argparse.Namespace) -> str:
    """Return the ``patchlane property`` command line that re-runs this failure alone."""
    argv = ["patchlane", "property", "--seed", str(failure.seed), "--cases", str(report.cases)]
    if args.base is not None:
        argv += ["--base", args.base]
    if args.head is not None:
        argv += ["--head", args.head]
    argv += ["--only", failure.property]
    if failure.case_index is not None:
        argv += ["--case", str(failure.case_index)]
    return shlex.join(argv)
