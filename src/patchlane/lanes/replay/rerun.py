"""A failure that does not repeat is no evidence (docs/architecture.md §1 rule 6, §2).

A node that failed in the replay at the head and passes at the base (``basecheck``) would
make the verdict ``reject``. A racy test (two processes and a pipe, a timer, a port) can
fail there once and pass the next time with the very same code, so the verdict would not
repeat. Each such node therefore runs again, alone (one pytest process for it, nothing
before it), in a fresh detached checkout of the head and, with the base's code only, in one
of the base:

- it fails again alone at the head (``HEAD_TRIES`` times, each in a fresh checkout) and
  passes alone at the base: the failure repeats and counts against the patch (``reject``
  stays);
- it passes alone at the head (once is enough): the failure does not repeat; the replay
  gives no evidence (``undecided``, "flaky at the head: freeze it or fix it"), never a pass;
- it fails alone at the base too (the base collects it and it fails there): the node fails
  without the tests that ran before it, at the base as at the head, which is no evidence
  about the patch either (``fails_at_base``, as the base check says).

A patch can use this only to reach ``undecided``: a rerun never turns a failure into a pass,
and a node's failure that is not shown not to repeat keeps counting. It is bounded: at most
``RERUN_CAP`` nodes run again (up to ``HEAD_TRIES`` + 1 processes each); with more, the
failures stand, as does a node that timed out (a hang is not run again). Only after a local
run: after a ``--replay COMMAND`` the host's run is the evidence, and running the head's
code here is what a command mode is there to avoid.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from patchlane.formats.replay_report import ReplayOutcome, ReplayReport
from patchlane.formats.status import Status
from patchlane.infra import git, sandbox
from patchlane.infra.ui import Output
from patchlane.lanes.replay.basecheck import BaseRun, failures_at_base
from patchlane.lanes.replay.results import PASSED, TestRun
from patchlane.lanes.replay.run import run_tests
from patchlane.lanes.replay.testbound import carry
from patchlane.project.build import built

# How many failing nodes run again: each costs two pytest processes, and a patch that fails
# more tests than this is not one whose verdict hangs on a race.
RERUN_CAP = 5
# How many times a node runs again alone at the head before its failure counts as one that
# repeats: a race lost one time in five would still repeat once in 25 gates after a single
# rerun (a reject that does not repeat either), once in 125 after two.
HEAD_TRIES = 2
FLAKY = "flaky at the head: freeze it or fix it"


@dataclass(frozen=True)
class Rerun:
    """What running the failing nodes again, alone, showed.

    ``reran``: the nodes run again (at most ``RERUN_CAP``; none when more failed);
    ``flaky``: those that passed alone at the head (their failure does not repeat);
    ``fail_alone_at_base``: those that failed alone at the head and at the base alike;
    ``repeats``: those that failed alone at the head and not at the base (passed there, or
    a node the base does not have).
    """

    reran: tuple[str, ...] = ()
    flaky: tuple[str, ...] = ()
    fail_alone_at_base: tuple[str, ...] = ()
    repeats: tuple[str, ...] = ()


def passed_alone(run: TestRun, nodeid: str) -> bool:
    """Whether ``run`` (of ``nodeid`` alone) passed it: collected, passed, and a run whose
    exit status agrees with its outcomes and imported nothing from outside the tree."""
    result = run.results.get(nodeid)
    return result is not None and result.outcome == PASSED and not run.problems and not run.foreign


def rerun_alone(base: BaseRun, head: str, nodeids: Sequence[str]) -> Rerun:
    """Run each of ``nodeids`` (failed at the head, passing at the base) again alone: at the
    ``head`` ``HEAD_TRIES`` times, each in a fresh detached checkout of it, and at
    ``base.merge_base`` with the base's code only (``basecheck.failures_at_base``, one node at a
    time); all of these at once. Returns the ``Rerun``; with
    more than ``RERUN_CAP`` nodes, an empty one (nothing ran). Raises ``GitError`` when a
    commit cannot be checked out, ``BuildFailed`` when a build fails."""
    if not nodeids or len(nodeids) > RERUN_CAP:
        return Rerun()
    flaky: list[str] = []
    at_base: list[str] = []
    repeats: list[str] = []
    with (
        tempfile.TemporaryDirectory(prefix="patchlane-rerun-") as tmp,
        # Every run of every node at once, not one after the other: a failure that takes
        # its timeout (a socket, a lock) then costs it once, not three times. A node whose
        # first head run passes has run twice where once was enough: rare, and no verdict
        # depends on which run came first.
        ThreadPoolExecutor(max_workers=HEAD_TRIES + 1, initializer=carry()) as pool,
    ):

        def at_head(i: int, attempt: int, nodeid: str) -> bool:
            # A checkout per run: nothing one run wrote can meet the next.
            tree = Path(tmp) / f"head-{i}-{attempt}"
            repo = base.repo
            git.checkout_detached(repo, head, tree, branch=git.branch_for(repo, head))
            sandbox.judged(tree, repo)  # shown at the repository's path (infra.origins)
            built(base.build, tree, "head, again")
            run = run_tests(
                tree, nodeids=[nodeid], hash_seed=base.hash_seed, timeout_s=base.timeout_s
            )
            return passed_alone(run, nodeid)

        runs = [
            (
                nodeid,
                [pool.submit(at_head, i, attempt, nodeid) for attempt in range(HEAD_TRIES)],
                pool.submit(failures_at_base, base, [nodeid]),
            )
            for i, nodeid in enumerate(nodeids)
        ]
        for nodeid, heads, at in runs:
            passes = any([f.result() for f in heads])  # every result: a raise is raised
            base_fails = at.result()
            if passes:
                flaky.append(nodeid)
            elif base_fails:
                at_base.append(nodeid)
            else:
                repeats.append(nodeid)
    return Rerun(tuple(nodeids), tuple(flaky), tuple(at_base), tuple(repeats))


def _quote(ids: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def to_run_again(report: ReplayReport) -> tuple[str, ...]:
    """Return the failed nodes of ``report`` whose failure may not repeat: those that do not
    fail at the base too; none (``()``) unless it failed, or when one of them stands on its
    own: a skip the patch added (no race) or a node that timed out (a hang, whose rerun would
    spend its bound again). May hold more than ``RERUN_CAP`` nodes."""
    if report.status != Status.FAIL:
        return ()
    excused = set(report.fail_at_base_too or ())
    failing = tuple(n for n in report.failed if n not in excused)
    if set(failing) & set(report.skipped_but_pass_at_base or ()):
        return ()
    whys = report.failed_why or {}
    if any("timed out" in whys.get(n, "") for n in failing):
        return ()
    return failing


def judged_again(base: BaseRun, head: str, report: ReplayReport, out: Output) -> ReplayReport:
    """Return the failed ``report`` (its ``fail_at_base_too`` and ``skipped_but_pass_at_base``
    already decided) after its remaining failures ran again alone (``rerun_alone``): still
    ``fail`` while one of them repeats or was not run again (more than ``RERUN_CAP``, or a
    skip the patch added, which is no race); else ``error`` with outcome
    ``flaky_at_head`` (naming the nodes) when one passed alone at the head, or
    ``fails_at_base`` when each failed alone at the base too. Unchanged for any other
    report. The reruns are of ``head`` and ``base``'s merge base, built with the map's
    build command. Raises ``GitError``, ``BuildFailed``."""
    failing = to_run_again(report)
    if not failing:
        return report
    if len(failing) > RERUN_CAP:
        out.progress(
            f"replay: {len(failing)} node(s) fail at the head only; more than {RERUN_CAP}: "
            "not run again"
        )
        return dataclasses.replace(report, reran_alone=())
    out.progress(f"replay: running {len(failing)} failing node(s) again, alone, at both sides")
    again = rerun_alone(base, head, failing)
    report = dataclasses.replace(
        report,
        reran_alone=again.reran,
        flaky_at_head=again.flaky,
        fail_at_base_too=tuple(
            sorted({*(report.fail_at_base_too or ()), *again.fail_alone_at_base})
        ),
    )
    if again.repeats:
        return dataclasses.replace(
            report,
            reason=f"{report.reason}; run again alone, {len(again.repeats)} fail(s) at the "
            "head again and not at the base",
        )
    if again.flaky:
        return dataclasses.replace(
            report,
            status=Status.ERROR,
            outcome=ReplayOutcome.FLAKY_AT_HEAD,
            reason=f"{FLAKY}: {_quote(again.flaky)} failed in the replay and passed when run "
            "again alone at the head (a race, or a dependence on the tests that ran before "
            "it): a failure that does not repeat alone is no evidence either way",
        )
    return dataclasses.replace(
        report,
        status=Status.ERROR,
        outcome=ReplayOutcome.FAILS_AT_BASE,
        reason=f"every failing node fails at the base as well when run alone "
        f"({_quote(again.fail_alone_at_base)}): a test that cannot pass here without the "
        "tests before it is no evidence about the patch",
    )
