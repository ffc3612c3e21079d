"""State left behind widens the slice (DESIGN §2; docs/architecture.md §4, "Replay slice").

The slice holds the tests that reach the change, but pytest runs a suite in one process: a
test the patch adds that sets a variable through a local name, or changed code that rebinds
another module's attribute through ``vars(sys.modules.get(...))``, breaks tests outside the
slice that only see it because they run later. The run child watches the process
(``child.leftover``) and names what each test left behind (``TestRun.left``).

When the head's run left something:

1. the nodes after which it was first seen run at the base, in the slice's order (a
   detached checkout, as every base run): what they leave behind there too is the suite's
   own habit (a lazy cache, a plugin's flag set by the first test, a session fixture's
   variable), not the patch's. Running fewer tests at the base than the slice can only
   widen more (cost), never less;
2. if the head leaves something the base does not, the slice runs again at the head, in one
   process, followed by every other test of the suite's files (``then_files``): the
   simplest set that surely holds every test that can see it;
3. a test outside the slice that fails there is run the same way at the base (the slice,
   then the same files, in one process); one that fails only at the head counts against
   the patch (rule 4), with the rule that added it.

Every test run after the slice carries that rule in the replay report (``widened``). The
canary stays a second net. Costs nothing when the head's slice leaves nothing behind; when it
does, a run at the base of the few nodes after which it was seen, and a suite run at the
head only when the head leaves what the base does not.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from patchlane.formats.replay_report import ReplayOutcome, ReplayReport
from patchlane.formats.status import Status
from patchlane.infra import git, sandbox
from patchlane.lanes.replay.results import FAILED, TestRun, file_part
from patchlane.lanes.replay.run import Also, run_tests
from patchlane.project.build import Build, built

# How many items of what was left behind a rule names.
SHOWN = 3


@dataclass(frozen=True)
class Widened:
    """What widening found: ``left`` (what the head left behind that the base does not, and
    after which node), ``rules`` (each test run after the slice, and the rule that added
    it), ``failed`` (those that fail at the head and not at the base, and why)."""

    left: Mapping[str, str]
    rules: Mapping[str, str]
    failed: Mapping[str, str]


@dataclass(frozen=True)
class Sides:
    """Where the runs happen: the head's checkout (``tree``), the repository and the base
    commit to check out, the map's build, the run's hash seed, timeout and freeze report."""

    tree: Path
    repo: Path
    merge_base: str
    build: Build | None
    hash_seed: int
    timeout_s: float
    freeze_report: Path | None = None


def suite_files(collected: Iterable[str], known: Iterable[str] = ()) -> tuple[str, ...]:
    """Return the test files of the node ids ``collected`` at the head and ``known`` (the
    dependency map's tests, when the collection was narrowed to candidates), sorted."""
    return tuple(sorted({file_part(n) for n in (*collected, *known)}))


def rule_of(left: Mapping[str, str]) -> str:
    """Return the rule that widens the slice for ``left`` (what -> after which node)."""
    items = sorted(left.items())
    shown = ", ".join(f"{what} (after {by})" for what, by in items[:SHOWN])
    more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return f"the slice left state behind that the base does not: {shown}{more}"


def widen(
    sides: Sides, slice_ids: Sequence[str], files: Sequence[str], head: TestRun
) -> Widened | None:
    """Return what widening found for the head's slice run ``head`` (``None`` when it left
    nothing behind); see the module docstring. ``files``: the suite's test files. Raises
    ``GitError`` when the base cannot be checked out, ``BuildFailed``."""
    if not head.left:
        return None
    with tempfile.TemporaryDirectory(prefix="patchlane-widen-") as tmp:
        base = Path(tmp) / "base"
        # As the slice's run has its tree: on its branch, shown at the repository's path.
        git.checkout_detached(
            sides.repo, sides.merge_base, base, branch=git.branch_for(sides.repo, sides.merge_base)
        )
        sandbox.judged(base, sides.repo)
        built(sides.build, base, "base")
        after = frozenset(head.left.values())
        firsts = [n for n in slice_ids if n in after]
        at_base = _run(sides, base, firsts).left if firsts else {}
        left = {what: by for what, by in head.left.items() if what not in at_base}
        if not left:
            return Widened({}, {}, {})
        rule = rule_of(left)
        wanted = frozenset(slice_ids)
        wide = _run(sides, sides.tree, slice_ids, files)
        outside = [n for n in wide.results if n not in wanted]
        failing = [n for n in outside if wide.results[n].outcome == FAILED]
        excused: frozenset[str] = frozenset()
        if failing:
            base_wide = _run(sides, base, slice_ids, files)
            excused = frozenset(
                n
                for n in failing
                if n in base_wide.results and base_wide.results[n].outcome == FAILED
            )
    failed = {
        n: f"fails after the slice ({rule}): {wide.results[n].why}"
        for n in failing
        if n not in excused
    }
    return Widened(left, dict.fromkeys(outside, rule), failed)


def _run(sides: Sides, tree: Path, nodeids: Sequence[str], then: Sequence[str] = ()) -> TestRun:
    return run_tests(
        tree,
        nodeids=nodeids,
        also=Also(then_files=then),
        hash_seed=sides.hash_seed,
        timeout_s=sides.timeout_s,
        freeze_report=sides.freeze_report,
    )


def with_widened(report: ReplayReport, widened: Widened | None) -> ReplayReport:
    """Return ``report`` with the tests widening ran (``widened``) and, when one of them
    fails at the head only, failed (rule 4) with that reason."""
    if widened is None or not widened.rules:
        return report
    report = dataclasses.replace(report, widened=dict(widened.rules))
    if not widened.failed:
        return report
    ids = sorted(widened.failed)
    shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    why = (
        f"{len(ids)} test(s) outside the slice fail after it, in one process, and pass so at "
        f"the base ({rule_of(widened.left)}): {shown}"
    )
    failed_why = {**(report.failed_why or {}), **widened.failed}
    reason = f"{report.reason}; {why}" if report.status == Status.FAIL else why
    return dataclasses.replace(
        report,
        status=Status.FAIL,
        outcome=ReplayOutcome.FAIL,
        reason=reason,
        failed=tuple(sorted({*report.failed, *ids})),
        failed_why=failed_why,
    )
