"""A test that ran past its bound at the head, run again at the base (``testbound``).

A node that ran past its bound at the head is run once more at the base under the same bound
(``at_base``): past it there too, the test is this machine's to fix (exit 2); within it, the
head's failure stands (a pass at the base: the patch made it hang) or is the base's as any
failure is (``basecheck``). The other tests of the stopped run are not judged: a red verdict
needs no more evidence, and a failure the base excuses leaves the replay without a pass.
"""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass
from pathlib import Path

from patchlane.errors import EnvironmentFault
from patchlane.formats.replay_report import ReplayReport
from patchlane.infra.ui import Output, one_line
from patchlane.lanes.replay.basecheck import BaseRun, checkout_base
from patchlane.lanes.replay.results import TestRun
from patchlane.lanes.replay.run import run_tests
from patchlane.lanes.replay.testbound import bounded


@dataclass(frozen=True)
class AtBase:
    """How the node that overran at the head did at the base under the same bound:
    ``overran`` there too, else its outcome (``passed``, ``failed``, ``skipped``...)."""

    nodeid: str
    overran: bool
    outcome: str


def at_base(base: BaseRun, nodeid: str, bound_s: float) -> AtBase:
    """Run ``nodeid`` alone on the base commit (a detached checkout, built with the map's
    build command, as the head's run) under ``bound_s``; return how it did. Raises
    ``GitError``, ``BuildFailed``, ``OSError`` as the runs do."""
    with tempfile.TemporaryDirectory(prefix="patchlane-base-bound-") as tmp:
        tree = Path(tmp) / "tree"
        checkout_base(base, tree)
        with bounded(bound_s):
            run = run_tests(
                tree, nodeids=[nodeid], hash_seed=base.hash_seed, timeout_s=base.timeout_s
            )
    result = run.results.get(nodeid)
    return AtBase(nodeid, run.overran == nodeid, result.outcome if result else "failed")


def judge_overrun(base: BaseRun, report: ReplayReport, run: TestRun, out: Output) -> ReplayReport:
    """Judge a failed ``report`` whose head ``run`` was stopped by a node past its bound:
    that node runs at the base under the same bound (``at_base``). Returns ``report``
    without the nodes the run left unjudged (a review event names how many), its reason
    saying what happened; the node itself stays failed for ``basecheck`` to judge as any
    failure (it fails at the base as well, or it counts against the patch). ``report``
    unchanged when no node ran past its bound. Raises ``EnvironmentFault`` (exit 2) when
    the node runs past its bound at the base too: this machine's or the bound's, not the
    patch's; ``GitError``, ``BuildFailed``, ``OSError`` as the base's run does."""
    node, bound = run.overran, run.bound_s
    if node is None or bound is None:
        return report
    shown = one_line(node)[:200]
    out.progress(
        f"replay: {shown} ran past its bound of {bound:g} s at the head; running it at the "
        "base under the same bound"
    )
    there = at_base(base, node, bound)
    if there.overran:
        raise EnvironmentFault(
            f"{shown} runs past its bound of {bound:g} s at the base as at the head: it hangs "
            "here without the patch, or the bound is too short for this machine; pass "
            "--test-timeout SECONDS (longer) and gate again"
        )
    dropped = frozenset(run.not_judged) & frozenset(report.failed)
    at = {"passed": "passes", "failed": "fails"}.get(there.outcome, f"is {there.outcome}")
    reason = (
        f"{shown} timed out after {bound:g} s at the head and {at} at the base under the same bound"
    )
    events: tuple[str, ...] = ()
    if dropped:
        reason += f"; {len(dropped)} other node(s) not judged (the run stopped there)"
        events = (
            f"{len(dropped)} node(s) of the slice were not judged: the run was stopped when "
            f"{shown} ran past its bound of {bound:g} s",
        )
    return dataclasses.replace(
        report,
        reason=reason,
        failed=tuple(n for n in report.failed if n not in dropped),
        failed_why={n: w for n, w in (report.failed_why or {}).items() if n not in dropped},
        review_events=(*(report.review_events or ()), *events),
    )
