"""``patchlane demo``: gate agent-style patches to the bundled example and show the verdicts."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchlane.errors import Exit
from patchlane.infra.ui import one_line, show, write_stdout

if TYPE_CHECKING:
    from patchlane.demo.scenarios import Outcome
    from patchlane.demo.triage import TriageOutcome
    from patchlane.main import Context


def register(sub: Any, name: str, help_text: str, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        name,
        help=help_text,
        parents=parents,
        description="Copy the bundled example project into a new git repository, commit it "
        "as main, then for each scenario branch from main, apply an agent-style patch and "
        "run the gate on it (--base main --seed 20260924 --cases 200 --today 2026-09-24 "
        "--replay none). Prints each verdict and where its evidence is. Then writes some of "
        "those patches as diff files and predictions, adds one that does not apply, and "
        "triages them all at once (-j 2, --replay local). Exit 0 when every scenario and "
        "triage candidate got its expected verdict, 1 otherwise.",
    )
    p.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="work in DIR (new or empty) instead of a new temporary directory",
    )


def run(args: argparse.Namespace, ctx: Context) -> int:
    from patchlane.demo.repo import DemoRepo, prepare_root
    from patchlane.demo.scenarios import DEMO_CASES, DEMO_SEED, DEMO_TODAY, SCENARIOS, run_demo
    from patchlane.demo.triage import run_triage
    from patchlane.inputs.jsonio import dumps_report

    keep = None if args.keep is None else Path.cwd() / args.keep
    root = prepare_root(keep)
    ctx.out.progress(f"demo: working in {show(os.fspath(root))}")
    outcomes = run_demo(root, SCENARIOS, progress=ctx.out.progress)
    triaged = run_triage(DemoRepo(root / "repo"), root, progress=ctx.out.progress)
    all_ok = all(o.ok for o in outcomes) and all(t.ok for t in triaged)
    if ctx.out.json:
        write_stdout(dumps_report([o.to_json() for o in outcomes]))
        return Exit.GREEN if all_ok else Exit.RED

    say = ctx.out.say
    say(
        f"patchlane demo: the bundled example, committed as main in {show(os.fspath(root / 'repo'))}"
    )
    say(
        f"each scenario is a branch gated with --base main --seed {DEMO_SEED} "
        f"--cases {DEMO_CASES} --today {DEMO_TODAY.isoformat()} (unless the scenario sets "
        "its own review date) --replay none (or local where the scenario says)"
    )
    say("")
    for line in table(outcomes, root):
        say(line)
    say("")
    say("what the gate saw (from each scenario's classify.json and lane reports):")
    for o in outcomes:
        for finding in o.findings():
            say(f"  {o.scenario.name}: {show(finding)}")
    say("")
    good = sum(o.ok for o in outcomes)
    say(f"{good} of {len(outcomes)} scenarios got the expected verdict for the expected reason.")
    evidence = show(os.fspath(root / "evidence"))
    say(
        f"evidence: {evidence}/SCENARIO/ holds classify.json, property-report.json, "
        "fixture-report.json, freeze-report.json, replay-report.json, verdict.json and "
        "review.md (the note for a person)"
    )
    say(f"look at one: cat {evidence}/silent-fixture-edit/fixture-report.json")
    say(
        f"each patch is the branch of its name: git -C {show(os.fspath(root / 'repo'))} log main..SCENARIO"
    )
    say("")
    for line in triage_section(triaged, root):
        say(line)
    return Exit.GREEN if all_ok else Exit.RED


def table(outcomes: list[Outcome], root: Path) -> list[str]:
    """Return the result table: scenario, expected, got, ok, evidence dir, reason.

    The reason shown is the one the scenario exists to demonstrate (its key rule and lane);
    every reason, in rule order, is in the scenario's ``verdict.json``. It comes last so
    that a long message wraps without breaking the columns.
    """

    rows = [("scenario", "expected", "got", "ok", "evidence", "reason (rule [lane])")]
    for o in outcomes:
        key = o.key_reason
        reason = (
            f"{key.rule} [{key.lane}] {key.message}"
            if key is not None
            else f"missing rule {o.scenario.key.rule} [{o.scenario.key.lane}]"
        )
        try:
            where = o.out_dir.relative_to(root).as_posix() + "/"
        except ValueError:
            where = os.fspath(o.out_dir)
        rows.append(
            (
                o.scenario.name,
                o.scenario.expected,
                o.verdict,
                "yes" if o.ok else "NO",
                show(where),
                reason,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row[:5], widths, strict=True)) + "  " + row[5]
        for row in rows
    ]


def triage_section(triaged: list[TriageOutcome], root: Path) -> list[str]:
    """Return the triage section: a heading with the command it ran, one row per candidate
    best first (the order of ``triage.md``: candidate, expected, got, ok, evidence, first
    reason), a count and where the summary is."""
    from patchlane.demo.scenarios import DEMO_CASES, DEMO_SEED, DEMO_TODAY
    from patchlane.demo.triage import PATCH_DIR, PREDICTIONS, TRIAGE_JOBS, TRIAGE_OUT, TRIAGE_REPLAY
    from patchlane.triage.summary import ranked

    def at(rel: str) -> str:
        return show(os.fspath(root / rel))

    lines = [
        "triage: the same kind of patches as an agent hands them over, all gated at once",
        f"  patchlane --repo {at('repo')} triage --base main --seed {DEMO_SEED} "
        f"--cases {DEMO_CASES} --today {DEMO_TODAY.isoformat()} --replay {TRIAGE_REPLAY} "
        f"-j {TRIAGE_JOBS} --out-dir {at(TRIAGE_OUT)} {at(PATCH_DIR)} {at(PREDICTIONS)}",
        "",
    ]
    by_name = {t.row.name: t for t in triaged}
    rows = [("candidate", "expected", "got", "ok", "evidence", "first reason")]
    for r in ranked([t.row for t in triaged]):
        t = by_name[r.name]
        where = "-" if r.evidence is None else f"{TRIAGE_OUT}/{r.evidence}/"
        # A diff's own path is the source column's: shown relative to the demo's folder.
        reason = one_line(r.reason.replace(os.fspath(root) + os.sep, ""))
        reason = reason if len(reason) <= 120 else reason[:117] + "..."
        rows.append((r.name, t.case.expected, r.verdict, "yes" if t.ok else "NO", where, reason))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines += [
        "  ".join(cell.ljust(w) for cell, w in zip(row[:5], widths, strict=True)) + "  " + row[5]
        for row in rows
    ]
    good = sum(t.ok for t in triaged)
    lines += [
        "",
        f"{good} of {len(triaged)} triage candidates got the expected verdict; "
        "a patch that does not apply is a row, not an abort.",
        f"summary: {at(TRIAGE_OUT)}/triage.md (best first) and triage.jsonl; "
        f"one folder per gated candidate beside them; the inputs are in {at('candidates')}/",
    ]
    return lines
