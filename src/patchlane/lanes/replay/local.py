"""``--replay local``: the replay's pipeline on this machine, one step after another.

1. the base's dependency map (``Stage.the_map``);
2. the head commit materialised for selection, and the plan of the slice (``select``:
   what comes before pytest collects), beside a real checkout of the head for the run;
3. the map's build command run in that checkout (``compiled``);
4. beside the slice, in a thread pool: the tests that cannot fail chosen from the map
   (``vacuity``), and the base version of the changed test files (``start_test_changes``);
5. one pytest child in the checkout collects the candidate test files and waits
   (``split.start``, a ``chosen.Session``); this process selects the slice from what it
   collected (``select.decide_slice``: written and hashed before any test runs), and the
   child runs exactly that (``Session.run``); the patch's own test files are collected and
   run in processes of their own (``split``);
6. the slice widened by the state it left behind (``widen``);
7. the receipt built and signed (``receipts.local_receipt``; the file written is evidence
   only) and verified in memory, then the checks at the base and the tests that cannot fail
   (``checks.verified_and_checked``).

The thread pool is the one overlap kept: the base's versions of the changed test files and
the tests that cannot fail run while the head's slice runs, and neither reads the slice's
result (each is a pytest child of its own; the machine's cores run them side by side).
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from pathlib import Path

from patchlane.errors import GitError
from patchlane.formats.depmap import DependencyMap
from patchlane.formats.receipt import utc_stamp
from patchlane.formats.replay_report import ReplayOutcome, ReplayReport
from patchlane.infra import git, sandbox
from patchlane.infra.ui import one_line
from patchlane.inputs.jsonio import atomic_write_bytes
from patchlane.lanes.replay import basecheck, split
from patchlane.lanes.replay.basecheck import BaseVersions
from patchlane.lanes.replay.checks import (
    Ran,
    changed_test_paths,
    collection_failed,
    refuse_environment_faults,
    verified_and_checked,
)
from patchlane.lanes.replay.chosen import Scope
from patchlane.lanes.replay.collect import CollectionError
from patchlane.lanes.replay.compiled import wrote_events
from patchlane.lanes.replay.receipts import local_receipt
from patchlane.lanes.replay.reports import empty, no_evidence, with_events, with_slice
from patchlane.lanes.replay.results import Runner, TestRun
from patchlane.lanes.replay.runprogress import logged, shown
from patchlane.lanes.replay.select import SlicePlan, base_collector, decide_slice, plan_slice
from patchlane.lanes.replay.selection import Selection
from patchlane.lanes.replay.split import own_test_files
from patchlane.lanes.replay.stage import Stage, added_or_changed
from patchlane.lanes.replay.testbound import carry, in_force
from patchlane.lanes.replay.vacuity.lane import Judging, Vacuity, start_early, start_with_slice
from patchlane.lanes.replay.widen import Sides, Widened, suite_files, widen, with_widened
from patchlane.project.build import BuildResult, built


def replay_here(stage: Stage) -> ReplayReport:
    """The local pipeline (the module docstring), under the stage's seeds. Raises what
    ``lane.replay`` raises."""
    # Three threads, beside the slice: the tests that cannot fail (their run, the literals
    # of the base's tests) and the base version of the changed test files
    # (``start_test_changes``).
    with ThreadPoolExecutor(max_workers=3, initializer=carry()) as pool:  # the bound too
        return _replay_here_with(stage, pool)


def _replay_here_with(stage: Stage, pool: Executor) -> ReplayReport:
    """``replay_here`` with its thread ``pool`` for the runs beside the slice."""
    repo, cls, opts, out, clock = stage.repo, stage.cls, stage.opts, stage.out, stage.clock
    dep_map, note = stage.the_map()
    with _scratch(pool) as tmp:
        # The head commit's bytes, not the work tree: the receipt names that commit.
        with clock.step("replay: selection"):
            plan = plan_slice(
                repo,
                cls.patch.review_map,
                Path(tmp) / "head",
                stage.slice_request((dep_map, note)),
                collects_at_base=base_collector(
                    repo, cls.patch.review_map, cls.merge_base, stage.hash_seed, stage.timeout_s
                ),
            )
            not_run = _check_out(stage, Path(tmp) / "run")
            if not_run is not None:
                return not_run
        out.progress(plan.progress)
        # Built where the tests run: the checkout (selection read the copy beside it).
        head_build = _build_head(stage, Path(tmp) / "run")
        # Beside the slice's run: it needs only the base's map and the head's commit, in a
        # checkout of its own; only the tests that pass in the slice are judged.
        vacuity = Vacuity(repo, cls, pool, stage.hash_seed, out, dep_map=dep_map)
        early: Judging | None = None
        if dep_map is not None:
            with clock.step("replay: tests that cannot fail"):
                early = start_early(vacuity)
        base_versions = start_test_changes(stage, pool)
        started = utc_stamp()
        begun = time.perf_counter()
        try:
            with (
                shown(logged(out)),  # tests done of the slice and the one running, every 10 s
                split.start(
                    Path(tmp) / "run",
                    _with_preload(plan.scope, dep_map, stage),
                    _own_tests(stage, plan, Path(tmp) / "head"),  # run apart (``split``)
                    Runner(stage.hash_seed, stage.timeout_s, stage.freeze_path),
                ) as session,
            ):
                selection = decide_slice(plan, session.collected())
                to_run = _to_run(stage, selection)
                if early is None and to_run:
                    # The map could not choose before the head's collection: the slice's
                    # tests that reach the changed code can, before the slice runs and
                    # beside it, rather than after it (``vacuity.start``).
                    early = start_with_slice(vacuity, to_run, selection.reached_by)
                ran = session.run(to_run)
        except CollectionError as e:
            return collection_failed(stage, e)
        # The choice was made while the child waited: selection's time, not the run's.
        clock.add("replay: selection", ran.choose_s)
        clock.add("replay: run", max(time.perf_counter() - begun - ran.choose_s, 0.0))
        widened = None
        if ran.run is not None and ran.run.left:
            with clock.step("replay: state left behind"):
                widened = _widen(stage, Path(tmp) / "run", selection, ran.run, dep_map)
    if ran.run is None:
        return with_slice(empty(opts.mode), selection)
    result = local_receipt(stage, selection, ran.run, started)
    report = verified_and_checked(
        stage, Ran(selection, result, dep_map, base_versions), (pool, early)
    )
    return _with_build_events(with_widened(report, widened), head_build)


@contextlib.contextmanager
def _scratch(pool: Executor) -> Iterator[str]:
    """Yield a new temporary directory for the head's trees; once the block ends, removed in
    ``pool`` (the checks after the run read none of it: removing two trees is kept off their
    way, and ``pool`` is waited for before the replay returns), or at once after an error."""
    scratch = tempfile.TemporaryDirectory(prefix="patchlane-replay-head-")
    try:
        yield scratch.name
    except BaseException:
        scratch.cleanup()
        raise
    pool.submit(scratch.cleanup)


def _with_preload(scope: Scope, dep_map: DependencyMap | None, stage: Stage) -> Scope:
    """``scope`` with the modules of the code under test that the base's whole suite
    imported (the dependency map's files run at import, neither tests nor under the test
    roots), when the map narrowed what the child collects: the full run has them loaded
    when the slice's tests run, so the slice's process must too (``child.leftover``)."""
    if dep_map is None or scope.only_files is None:
        return scope
    tests = {t.split("::", 1)[0] for t in dep_map.tests}
    roots = tuple(r.rstrip("/") + "/" for r in stage.cls.map_source.review_map.replay.tests)
    files = sorted(
        f
        for f in dep_map.import_lines
        if f.endswith(".py")
        and f not in tests
        and f.rsplit("/", 1)[-1] != "conftest.py"
        and not f.startswith(roots)
    )
    return dataclasses.replace(scope, preload=tuple(files))


def _widen(
    stage: Stage, tree: Path, selection: Selection, run: TestRun, dep_map: DependencyMap | None
) -> Widened | None:
    """Widen the slice by what ``run`` left behind (``widen``), in the head's checkout
    ``tree``. Raises what ``widen.widen`` raises."""
    stage.out.progress("replay: the slice left state behind; comparing with the base")
    sides = Sides(
        tree=tree,
        repo=stage.repo,
        merge_base=stage.cls.merge_base,
        build=stage.build,
        hash_seed=stage.hash_seed,
        timeout_s=stage.timeout_s,
        freeze_report=stage.freeze_path,
    )
    known = dep_map.tests if dep_map is not None else ()
    files = suite_files(selection.collected, known)
    return widen(sides, selection.nodeids, files, run)


def _with_build_events(report: ReplayReport, head_build: BuildResult | None) -> ReplayReport:
    """``report`` with the review event of a head build that wrote what the diff never
    showed (``compiled.wrote_events``), if it did."""
    wrote = wrote_events(head_build)
    return with_events(report, *wrote) if wrote else report


def _build_head(stage: Stage, tree: Path) -> BuildResult | None:
    """Run the map's build command in the materialised head ``tree`` before pytest
    collects (docs/architecture.md §2, "Compiled code"); return its result, ``None``
    without one. Raises ``BuildFailed`` when it fails."""
    build = stage.build
    if build is None:
        return None
    stage.out.progress(f"replay: building the head ({one_line(build.command)[:120]})")
    with stage.clock.step("replay: build"):
        return built(build, tree, "head", audit=True)


def _own_tests(stage: Stage, plan: SlicePlan, tree: Path) -> tuple[str, ...]:
    """The patch's own test files in the materialised head ``tree`` (``split``)."""
    changed = added_or_changed(stage.cls)
    return own_test_files(tree, changed, plan.scope, plan.selector.patterns)


def _check_out(stage: Stage, dest: Path) -> ReplayReport | None:
    """Make ``dest`` the run's tree: a real detached checkout of the head (``.git``
    present, as where the project runs its tests), beside the materialised copy selection
    reads, which no test can write (docs/architecture.md §2). Returns ``None``, or the report
    of a replay that cannot run because git cannot check the head out (never a pass)."""
    repo, head = stage.repo, stage.cls.head
    try:
        git.checkout_detached(repo, head, dest, branch=git.branch_for(repo, head))
    except GitError as e:
        why = f"replay not run: git cannot check out the head ({one_line(str(e))[:300]})"
        return no_evidence(stage.opts.mode, ReplayOutcome.NOT_RUN, why)
    # Its tests see it at the repository's path, as in the user's checkout (infra.origins).
    sandbox.judged(dest, repo)
    return None


def _to_run(stage: Stage, selection: Selection) -> tuple[str, ...] | None:
    """Write the chosen slice; return its node ids to run, or ``None`` (an empty slice).
    Raises ``EnvironmentFault`` as ``checks.refuse_environment_faults`` does."""
    atomic_write_bytes(stage.opts.slice_path, selection.slice_bytes)
    if not selection.nodeids:
        return None
    refuse_environment_faults(stage, selection)
    bound = in_force()
    stage.out.progress(
        f"replay: running {len(selection.nodeids)} node id(s) with pytest"
        + (f", {bound}" if bound else "")
    )
    return selection.nodeids


def start_test_changes(stage: Stage, pool: Executor) -> Future[BaseVersions] | None:
    """Start the run of the base version of the changed test files at the head in ``pool``,
    beside the slice: it needs the head's commit and the base's files, not the slice, when
    no helper under the test roots changed (else ``None``: it runs after the slice, with
    it; so it does when nothing changed under the test roots). Its result is only read when
    the verdict still needs it (``checks.test_changes``)."""
    repo, cls = stage.repo, stage.cls
    changed = changed_test_paths(stage)
    if not changed or basecheck.changes_helpers(repo, cls.merge_base, changed):
        return None
    stage.out.progress(
        "replay: running the base version of the changed test files, beside the slice"
    )
    ids: Sequence[str] = ()
    return pool.submit(basecheck.base_versions, stage.base, cls.head, changed, ids)
