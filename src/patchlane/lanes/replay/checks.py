"""The checks at the base: what the gate checks from outside a replay's run, in one sequence.

After the receipt is verified (``verify``, in memory for a local run, from the host's file
after a command), ``checked`` runs, in this order: the plugins pytest loaded against the
patch's harness files, the run's problems and failure reasons, the skips at the head that
pass at the base (rule 4), a test that ran past its bound run again at the base
(``overrun``), the failures that fail at the base as well, a local run's failures run again
alone (``rerun``), the patch's deleted tests and edited expectations, and the changed code
no passing base test reaches. Each step takes the ``Stage`` and the ``Ran`` (the selection,
the local run, the base's map) and returns the report with what it found.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass

from patchlane.errors import EnvironmentFault
from patchlane.formats.depmap import DependencyMap
from patchlane.formats.facts import HARNESS
from patchlane.formats.replay_report import EditedTest, ReplayOutcome, ReplayReport
from patchlane.formats.status import Status
from patchlane.infra.ui import one_line
from patchlane.lanes.replay import basecheck
from patchlane.lanes.replay.basecheck import BaseVersions, ChangedPath, HeadSuite
from patchlane.lanes.replay.collect import CollectionError, NetworkAtCollection
from patchlane.lanes.replay.overrun import judge_overrun
from patchlane.lanes.replay.reports import (
    harness_broke_collection,
    with_events,
    with_first_failure,
    with_slice,
)
from patchlane.lanes.replay.rerun import judged_again
from patchlane.lanes.replay.results import RunResult
from patchlane.lanes.replay.selection import Selection
from patchlane.lanes.replay.signing import load_public_key
from patchlane.lanes.replay.stage import Stage, quote
from patchlane.lanes.replay.vacuity.lane import Judging, Vacuity, checked, start
from patchlane.lanes.replay.verify import Expectations, replay_report, verify_receipt
from patchlane.project.classify import Classification
from patchlane.project.harness import module_patterns_at

# Files of the code under test that Python never runs or reads when the tests import it:
# type stubs and the typed-package marker. A change to them needs no test to reach it.
_NOT_RUN_SUFFIXES = (".pyi", "/py.typed")


@dataclass(frozen=True)
class Ran:
    """What the checks read of one replay: its ``selection``, a local ``run`` (``None``
    after a command: the host ran it), the merge base's ``dep_map`` (``None``: none), and
    the run of the base version of the changed test files started beside the slice
    (``base_versions``: ``None`` when it was not, ``local.start_test_changes``)."""

    selection: Selection
    run: RunResult | None = None
    dep_map: DependencyMap | None = None
    base_versions: Future[BaseVersions] | None = None


def collection_failed(stage: Stage, e: CollectionError) -> ReplayReport:
    """The head's suite did not collect as a whole (``e``). After a harness change that is
    the patch's doing and a person's to look at; otherwise, when the base's suite collects,
    the patch's code ended collection (it exits or raises at import under pytest): the
    project's own run at the head judges nothing, so the lane is red (``reject``), never
    the user's input error. Re-raises ``e`` when the base does not collect either: then it
    is this machine's or the project's fault (exit 2)."""
    cls, opts = stage.cls, stage.opts
    if cls.harness_changed:
        return harness_broke_collection(opts.mode, e)
    if isinstance(e, NetworkAtCollection):
        raise e  # the sandbox's doing as much as the code's: not a verdict on the patch
    with stage.clock.step("replay: base collection"):
        base_collects = basecheck.base_collects_suite(stage.base, cls.patch.review_map.replay.tests)
    if not base_collects:
        raise e
    return ReplayReport(
        Status.FAIL,
        f"the head's tests do not collect, the base collects the same tests: the patch's "
        f"code ends pytest's collection ({one_line(str(e))[:300]})",
        outcome=ReplayOutcome.FAIL,
        mode=opts.mode,
    )


def refuse_environment_faults(stage: Stage, selection: Selection) -> None:
    """Raise ``EnvironmentFault`` (exit 2) when a test file of the slice cannot import a
    package at the base and the head alike: the environment's fault, not the patch's."""
    errors = [e for e in selection.collect_errors if e.nodeid in selection.nodeids]
    if not any(e.missing for e in errors):
        return
    stage.out.progress("replay: a test file does not import; checking the base")
    faults = basecheck.environment_faults(stage.base, errors)
    if faults:
        raise EnvironmentFault(basecheck.fault_message(faults[0]))


def verify(stage: Stage, selection: Selection, rendered: bytes | None = None) -> ReplayReport:
    """The receipt verified against ``selection``'s slice: ``rendered`` (a local run's, in
    memory), else the receipt file a command left."""
    cls, opts, seed = stage.cls, stage.opts, stage.seed
    review_map = cls.map_source.review_map
    public_key = load_public_key(opts.public_key) if opts.public_key is not None else None
    verification = verify_receipt(
        selection.slice_bytes,
        opts.receipt_path.read_bytes() if rendered is None else rendered,
        stage.freeze_report,
        Expectations(
            seed=seed,
            head=cls.head,
            # The base's map decides whether a signature is required, never the patch's.
            require_signature=review_map.replay.require_signature,
            public_key=public_key,
            canary=None if selection.canary is None else selection.canary.nodeids,
        ),
    )
    report = replay_report(verification, slice_sha256=selection.sha256, seed=seed, head=cls.head)
    report = dataclasses.replace(report, mode=opts.mode)
    receipt = verification.receipt
    # A host's run is only as isolated as its receipt says; the local runs are the
    # verdict's own isolation fact (gate.run.isolation_facts).
    required = opts.mode != "local" and review_map.isolation == "required"
    if required and receipt is not None and receipt.isolation != "bwrap":
        said = receipt.isolation or "nothing"
        why = f"the map sets isolation: required, but the host's receipt says isolation {said}"
        return with_events(report, why)
    return report


def verified_and_checked(
    stage: Stage, ran: Ran, judging: tuple[Executor, Judging | None] | None = None
) -> ReplayReport:
    """The receipt verified against the slice (``verify``), then the checks at the base
    (``checked``) and, after a local run (``judging``: its pool, and the judgement of the
    tests that cannot fail if it started beside the slice), the tests that cannot fail
    (``vacuity``)."""
    selection, run = ran.selection, ran.run
    # A local run's receipt is checked as the bytes this process rendered (and wrote: the
    # file is evidence); a command's, as the file the host left.
    rendered = run.receipt.render() if run is not None else None
    verified = verify(stage, selection, rendered)
    report = with_events(with_slice(verified, selection), *(verified.review_events or ()))
    # Only after a local run, where this machine ran the head: a host's command gave a
    # receipt, and running the head's code here is what a command mode is there to avoid.
    # Not started yet: started now, before the checks at the base and beside them, which it
    # does not depend on (a verdict they turn red drops it, after its run ends).
    pool, started = judging if judging is not None else (None, None)
    vacuity = None
    if pool is not None:
        vacuity = Vacuity(
            stage.repo, stage.cls, pool, stage.hash_seed, stage.out, dep_map=ran.dep_map
        )
    if vacuity is not None and started is None and report.status == Status.PASS:
        with stage.clock.step("replay: tests that cannot fail"):
            started = start(vacuity, report, selection.reached_by)
    with stage.clock.step("replay: checks at the base"):
        report = checked_at_base(stage, ran, report)
    if run is None or vacuity is None or report.status != Status.PASS:
        return report
    with stage.clock.step("replay: tests that cannot fail"):
        return checked(vacuity, report, started, selection.reached_by)


def checked_at_base(stage: Stage, ran: Ran, report: ReplayReport) -> ReplayReport:
    """Return the verified ``report`` with what the gate checks from outside the run (the
    module docstring). With the map (``ran.dep_map``, the merge base's), a node that passed
    when the map was recorded is known to pass at the base (``known_at_base``) and is not
    run there again. The base's runs get the stage's hash seed: with ``--replay local`` the
    head run's, so that a node is compared under the same seed; after a command, the
    gate's own (the receipt's ``hash_seed`` is the host's word, and a host's choice must
    not decide what the base does)."""
    selection, run = ran.selection, ran.run
    loaded = set(selection.plugin_files) | set(run.run.plugin_files if run else ())
    report = plugins_outside_the_harness(stage.cls, sorted(loaded), report)
    if run is not None:
        results = run.run.results
        report = dataclasses.replace(
            report,
            run_problems=tuple(run.run.problems),
            failed_why={n: results[n].why for n in report.failed if n in results},
        )
    known = known_at_base(ran.dep_map)
    if known is not None and selection.canary is not None:
        # A canary test runs without the tests that ran before it in the full suite: one
        # that depends on them fails here for no fault of the patch, which only a run at
        # the base, drawn the same way, can tell.
        known -= frozenset(selection.canary.nodeids)
    if report.status == Status.PASS:
        report = skips_at_base(stage, report, known)
    if report.status == Status.FAIL and run is not None and run.run.overran is not None:
        report = judge_overrun(stage.base, report, run.run, stage.out)
    if report.status == Status.FAIL:
        report = with_first_failure(failures_at_base(stage, report, known))
    if report.status == Status.FAIL and run is not None:  # a local run: its failures run again
        report = judged_again(stage.base, stage.cls.head, report, stage.out)
    if report.status != Status.FAIL:
        report = test_changes(stage, ran, report)
    unreached = unreached_code(stage.cls, selection, frozenset(report.passed))
    report = dataclasses.replace(report, unreached=tuple(unreached))
    if unreached and report.status != Status.FAIL:
        report = with_events(
            report,
            f"no test that the base has and that passed reaches {len(unreached)} changed "
            f"file(s) of the code under test ({quote(unreached)}): the replay is no evidence "
            "for them",
        )
    return report


def plugins_outside_the_harness(
    cls: Classification, loaded: Sequence[str], report: ReplayReport
) -> ReplayReport:
    """Return ``report`` with the files pytest loaded as plugins, and a review event for
    each the patch changes that classify did not list as harness: a route the static rules
    missed (a plugin named by a computed string, one registered at run time). Such a plugin
    can rewrite outcomes."""
    harness = {path for path, kind in cls.control_plane if kind == HARNESS}
    missed = [p for p in loaded if p in cls.changed_paths and p not in harness]
    report = dataclasses.replace(report, plugin_files=tuple(loaded))
    if missed:
        report = with_events(
            report,
            f"pytest loaded {quote(missed)} as a plugin and the patch changes it: a test "
            "harness change classify did not see; a person must look before it counts",
        )
    return report


def unreached_code(
    cls: Classification, selection: Selection, passed: frozenset[str] | None = None
) -> list[str]:
    """Return the changed files of the code under test (the property lane's paths; not
    deleted, not control files) that the replay gives no evidence for.

    A file has evidence when a test file reaches it (imports, names or is it) that the base
    already has (a test the patch adds proves only what the patch wrote) and, when
    ``passed`` (the node ids that passed) is known, one of whose tests passed (a skipped test
    proves nothing). Code reached only through a subprocess, a computed import or
    module-level state is invisible to the static graph, so it stays ``undecided``."""
    added = {f.path for f in cls.files if f.status == "A"}

    def evidence(test_file: str) -> bool:
        if test_file == "*":
            return passed is None or bool(passed)
        if test_file in added:
            return False
        return passed is None or any(n.split("::", 1)[0] == test_file for n in passed)

    return sorted(
        f.path
        for f in cls.files
        if "property" in f.lanes
        and "replay" not in f.lanes
        and not f.path.endswith(_NOT_RUN_SUFFIXES)
        and f.status != "D"
        and not f.control
        and not any(evidence(t) for t in selection.reached_by.get(f.path, ()))
    )


def known_at_base(dep_map: DependencyMap | None) -> frozenset[str] | None:
    """The nodes the dependency map's recording saw pass at the base (``None``: no map).

    The recording ran the base's whole suite on this machine with these versions, so such
    a node does not fail at the base; taking that from the map can only keep a failure
    against the patch (the safe side), never excuse one. Hypothesis tests are left out:
    under another seed they draw other examples than the recording did."""
    if dep_map is None:
        return None
    return dep_map.passed_at_base - dep_map.whole_file_tests


def _split_known(nodes: Sequence[str], known: frozenset[str] | None) -> tuple[list[str], list[str]]:
    """``nodes`` split into those ``known`` to pass at the base and those to run there."""
    if known is None:
        return [], list(nodes)
    return [n for n in nodes if n in known], [n for n in nodes if n not in known]


def failures_at_base(
    stage: Stage, report: ReplayReport, known: frozenset[str] | None = None
) -> ReplayReport:
    """Only what the head changes counts against the patch: a node that fails at the base
    as well (run the same way, on this machine) is no evidence about the patch. Returns
    ``report`` with those nodes; when every failure is of that kind the replay gives no
    evidence (``undecided``), else it still fails. Nodes in ``known`` passed at the base
    when the dependency map was recorded: they are not run there again."""
    failed = list(report.failed)
    from_map, to_run = _split_known(failed, known)
    whys = report.failed_why or {}
    uncollected = frozenset(n for n in to_run if whys.get(n) == "not collected")
    also: list[str] = []
    if to_run:
        stage.out.progress(f"replay: {len(to_run)} node(s) failed; running them at the base")
        also = list(basecheck.failures_at_base(stage.base, to_run, uncollected))
    report = dataclasses.replace(
        report,
        fail_at_base_too=tuple(also),
        base_from_map=None
        if known is None
        else tuple(sorted({*(report.base_from_map or ()), *from_map})),
    )
    if not also:
        return report
    if any(n not in also for n in failed):
        reason = f"{report.reason} ({len(also)} other node(s) fail at the base as well)"
        return dataclasses.replace(report, reason=reason)
    return dataclasses.replace(
        report,
        status=Status.ERROR,
        outcome=ReplayOutcome.FAILS_AT_BASE,
        reason=f"every failing node fails at the base as well ({quote(also)}): a test that "
        "cannot pass here (environment, or already broken) is no evidence about the patch",
    )


def skips_at_base(
    stage: Stage, report: ReplayReport, known: frozenset[str] | None = None
) -> ReplayReport:
    """A node the suite skipped at the head but that passes at the base was hidden by the
    patch: it fails the replay (rule 4). Returns ``report`` with those nodes (unchanged when
    the suite skipped nothing). Nodes in ``known`` passed at the base when the dependency
    map was recorded: hidden, without a run."""
    skipped = list(report.skipped_by_suite)
    if not skipped:
        return report
    from_map, to_run = _split_known(skipped, known)
    hidden = list(from_map)
    if to_run:
        stage.out.progress(
            f"replay: {len(to_run)} node(s) skipped by the suite; running them at the base"
        )
        hidden += basecheck.skips_that_run_at_base(stage.base, to_run)
    hidden.sort()
    report = dataclasses.replace(
        report,
        skipped_but_pass_at_base=tuple(hidden),
        base_from_map=None if known is None else tuple(from_map),
    )
    if not hidden:
        return report
    return dataclasses.replace(
        report,
        status=Status.FAIL,
        outcome=ReplayOutcome.FAIL,
        failed=tuple(sorted({*report.failed, *hidden})),
        reason=f"{len(hidden)} node(s) skipped at the head pass at the base (the patch hides "
        f"them): {quote(hidden)}",
    )


def test_changes(stage: Stage, ran: Ran, report: ReplayReport) -> ReplayReport:
    """Deleted tests and edited expectations: review events (rule 6, ``undecided``).
    Returns ``report`` with them (and with the review events listed, even none, once the
    patch's test files were checked). ``ran.base_versions``: their run, started beside the
    slice (its result is taken, and its error raised, here)."""
    repo, cls, selection = stage.repo, stage.cls, ran.selection
    changed = changed_test_paths(stage)
    report = dataclasses.replace(report, deleted_tests=(), edited_expectations=())
    if not changed:
        return report
    suite = HeadSuite(
        collected=frozenset(selection.collected),
        broken=frozenset(e.nodeid for e in selection.collect_errors),
        slice_ids=selection.nodeids,
    )
    early = ran.base_versions
    if early is not None and not basecheck.changes_helpers(repo, cls.merge_base, changed):
        found = basecheck.judged(changed, suite, early.result())
    else:
        stage.out.progress("replay: running the base version of the changed test files")
        found = basecheck.test_changes(stage.base, cls.head, changed, suite)
    report = dataclasses.replace(
        report,
        deleted_tests=tuple(found.deleted),
        edited_expectations=tuple(EditedTest(n, why) for n, why in found.edited),
    )
    events = []
    if found.deleted:
        events.append(
            f"the patch deletes {len(found.deleted)} test(s) collected at the base: "
            f"{quote(list(found.deleted))}"
        )
    if found.edited:
        ids = [n for n, _ in found.edited]
        events.append(
            "the patch changes the expectations of tests it is judged by: the base version of "
            f"{len(ids)} test(s) fails at the head: {quote(ids)}"
        )
    return with_events(report, *events)


def changed_test_paths(stage: Stage) -> list[ChangedPath]:
    """The paths the patch changes under the test roots (both sides of renames), as
    ``basecheck.changed_test_paths`` finds them by the base's test module patterns."""
    cls = stage.cls
    sides: list[ChangedPath] = []
    for f in cls.files:
        sides.append(ChangedPath(f.status, f.path))
        if f.old_path is not None:
            sides.append(ChangedPath(f.status, f.old_path, renamed_to=f.path))
    patterns = module_patterns_at(stage.repo, cls.merge_base)
    return basecheck.changed_test_paths(sides, cls.map_source.review_map.replay.tests, patterns)
