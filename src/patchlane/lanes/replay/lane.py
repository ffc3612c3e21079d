"""The replay lane's decisions: select the slice, get a receipt (here or from a command), verify it.

Replay runs only when every local lane is green. ``--replay none`` stops at ``undecided``;
``local`` runs the slice here, on the head commit materialised from git; any other value is a
command with ``{slice}`` and ``{receipt}`` placeholders that submits the slice to the user's
own runner or a hosted one and leaves a receipt behind; it runs from a copy of the base,
never the patch's work tree (``replay_command``). Whatever comes back is verified before it
is believed; a command that fails or leaves no receipt is an unreachable host
(``undecided``), never a pass.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from patchlane.errors import ForeignCode, UsageError
from patchlane.formats.replay_report import (
    SKIPPED,
    EditedTest,
    PrivateFile,
    ReplayOutcome,
    ReplayReport,
)
from patchlane.formats.status import Status
from patchlane.infra.steps import Steps
from patchlane.infra.ui import Output, one_line
from patchlane.inputs.jsonio import atomic_write_bytes
from patchlane.lanes.replay.maprecord import RECORD_TIMEOUT_S
from patchlane.project.classify import Classification
from patchlane.project.facts import HARNESS
from patchlane.project.replay_command import RUN_TIMEOUT_S, ReplayCommand, run_command

if TYPE_CHECKING:
    from patchlane.formats.depmap import DependencyMap
    from patchlane.formats.freeze_report import FreezeReport
    from patchlane.lanes.replay.basecheck import BaseVersions, ChangedPath
    from patchlane.lanes.replay.chosen import Scope
    from patchlane.lanes.replay.collect import Collected, CollectionError
    from patchlane.lanes.replay.run import RunResult, TestRun
    from patchlane.lanes.replay.select import Selection, SlicePlan, SliceRequest
    from patchlane.lanes.replay.vacuity.lane import Judging
    from patchlane.lanes.replay.widen import Widened
    from patchlane.project.build import Build, BuildResult

# Files of the code under test that Python never runs or reads when the tests import it:
# type stubs and the typed-package marker. A change to them needs no test to reach it.
_NOT_RUN_SUFFIXES = (".pyi", "/py.typed")


@dataclass(frozen=True)
class ReplayOptions:
    mode: str
    seed: int | None
    failure_log: frozenset[str]
    public_key: Path | None
    slice_path: Path
    receipt_path: Path
    dep_map: str = "off"
    dep_cache: Path | None = None
    dep_map_timeout_s: float = RECORD_TIMEOUT_S
    # The map as the gate obtained it before any lane ran the head's code (``obtain_map``);
    # ``None``: look it up when the slice is selected.
    obtained: tuple[DependencyMap | None, str] | None = None
    # ``mode`` checked (``replay_command.parse_replay``): ``None`` for ``none`` and ``local``.
    command: ReplayCommand | None = None
    # ``--test-timeout``: each test's bound in seconds (``None``: derived, ``testbound``).
    test_timeout_s: float | None = None


@dataclass(frozen=True)
class _Stage:
    """What every step of one replay takes: the repository, the patch's classification, the
    options, ``seeds`` (the public seed the receipt answers to, and the hash seed drawn for
    the gate's own children), the freeze report, where it speaks and its clock."""

    repo: Path
    cls: Classification
    opts: ReplayOptions
    seeds: tuple[int, int]
    freeze_report: FreezeReport
    out: Output
    clock: Steps


def obtain_map(
    repo: Path, cls: Classification, opts: ReplayOptions, seed: int | None, out: Output
) -> tuple[DependencyMap | None, str] | None:
    """Return the base's dependency map and its note for the gate to hold in memory, or
    ``None`` when the replay will not select a slice with one (``--dep-map off``,
    ``--replay none``, no seed).

    Called before any lane runs the head's code: that code runs as this user and could
    write a map for the base into the cache, which a later lookup would take (a patch's
    property, or its oracle audit, found ``--dep-cache`` on an ancestor's command line).
    Raises what ``maprecord.obtain`` raises.
    """
    if opts.dep_map == "off" or opts.mode == "none" or seed is None:
        return None
    return _dependency_map(repo, cls, opts, seed, out)


def _no_evidence(mode: str, outcome: ReplayOutcome, reason: str) -> ReplayReport:
    """A report of a replay that gave no evidence (``error``: the verdict stays undecided)."""
    return ReplayReport(Status.ERROR, reason, outcome=outcome, mode=mode)


def _skipped(mode: str) -> ReplayReport:
    """The report of a replay never started because an earlier lane is red: no evidence
    (``error``) whose outcome, ``skipped``, lets a reject's summary leave it out."""
    reason = "replay skipped: an earlier lane is red (it runs only when every local lane is green)"
    return _no_evidence(mode, SKIPPED, reason)


def _harness_broke_collection(mode: str, e: Exception) -> ReplayReport:
    """The patch changed what pytest loads, and pytest no longer starts: that is the
    patch's doing and a person's to look at, not a fault of this machine (no exit 2)."""
    return _no_evidence(
        mode,
        ReplayOutcome.NOT_RUN,
        f"replay not run: pytest cannot collect the suite after the patch's harness "
        f"change ({one_line(str(e))[:300]})",
    )


def _collection_failed(stage: _Stage, e: CollectionError) -> ReplayReport:
    """The head's suite did not collect as a whole (``e``). After a harness change that is
    the patch's doing and a person's to look at; otherwise, when the base's suite collects,
    the patch's code ended collection (it exits or raises at import under pytest): the
    project's own run at the head judges nothing, so the lane is red (``reject``), never
    the user's input error. Re-raises ``e`` when the base does not collect either: then it
    is this machine's or the project's fault (exit 2)."""
    from patchlane.lanes.replay.basecheck import base_collects_suite
    from patchlane.lanes.replay.collect import NetworkAtCollection

    cls, opts = stage.cls, stage.opts
    if cls.harness_changed:
        return _harness_broke_collection(opts.mode, e)
    if isinstance(e, NetworkAtCollection):
        raise e  # the sandbox's doing as much as the code's: not a verdict on the patch
    review_map = cls.patch.review_map
    with stage.clock.step("replay: base collection"):
        base_collects = base_collects_suite(
            stage.repo,
            cls.merge_base,
            review_map.replay.tests,
            hash_seed=stage.seeds[1],
            timeout_s=RUN_TIMEOUT_S,
            build=_build(cls),
        )
    if not base_collects:
        raise e
    return ReplayReport(
        Status.FAIL,
        f"the head's tests do not collect, the base collects the same tests: the patch's "
        f"code ends pytest's collection ({one_line(str(e))[:300]})",
        outcome=ReplayOutcome.FAIL,
        mode=opts.mode,
    )


def _empty(mode: str) -> ReplayReport:
    reason = "empty slice: no test reaches the change, and an empty set is never evidence"
    return _no_evidence(mode, ReplayOutcome.EMPTY, reason)


def _with_slice(report: ReplayReport, selection: Selection) -> ReplayReport:
    """Return ``report`` with the selected slice's facts. Tests the full suite runs and the
    slice cannot carry are no evidence for them: each is a review event (rule 6)."""
    return dataclasses.replace(
        report,
        slice_sha256=selection.sha256,
        slice_count=len(selection.nodeids),
        suite_size=selection.suite_size,
        slice_added=len(selection.added),
        private=tuple(PrivateFile(path, why) for path, why in selection.private),
        slice_rules=dict(selection.rule_counts),
        slice_reasons=selection.reason_lines(),
        dependency_map=selection.dependency_map,
        canary=selection.canary,
        review_events=tuple(selection.not_replayed) or None,
    )


def _with_events(report: ReplayReport, *events: str) -> ReplayReport:
    """Return ``report`` with ``events`` added to its review events (the report lists them
    from now on, even when there are none yet)."""
    return dataclasses.replace(report, review_events=(*(report.review_events or ()), *events))


def replay(
    repo: Path,
    cls: Classification,
    opts: ReplayOptions,
    local_green: bool,
    freeze_report: FreezeReport,
    out: Output,
    steps: Steps | None = None,
) -> ReplayReport:
    """Return the replay lane's report (and write the slice and receipt files it used),
    with the review events compiled code raises (``lanes.replay.compiled``).

    Raises ``UsageError`` without a seed, ``CollectionError`` when pytest cannot collect the
    suite and the patch changes no harness file (this machine's fault, not the patch's),
    ``EnvironmentFault`` for a test file that cannot import a package at base and head
    alike, or for a map's build command that fails at both.
    """
    from patchlane.lanes.replay.compiled import compiled_events, judge_build_failure
    from patchlane.lanes.replay.testbound import bounded, for_replay
    from patchlane.project.build import BuildFailed

    bound = for_replay(opts.test_timeout_s, opts.obtained[0] if opts.obtained else None)
    try:
        with bounded(bound):  # every test this lane runs, at the head and the base
            report = _replay(repo, cls, opts, local_green, freeze_report, out, steps)
    except BuildFailed as e:
        report = judge_build_failure(repo, cls, opts.mode, e.result)
    except ForeignCode as e:
        # The code under test was not the tree under judgement: no evidence (rule 6).
        report = _no_evidence(opts.mode, ReplayOutcome.NO_EVIDENCE, str(e))
    if report.skipped:
        return report
    events = compiled_events(repo, cls)
    return _with_events(report, *events) if events else report


def _replay(
    repo: Path,
    cls: Classification,
    opts: ReplayOptions,
    local_green: bool,
    freeze_report: FreezeReport,
    out: Output,
    steps: Steps | None = None,
) -> ReplayReport:
    """The replay lane's report, as ``replay`` says; raises what it raises, and
    ``BuildFailed`` for a map's build command that fails in a tree."""
    if not local_green:
        # A local lane that is not green is red: the verdict is already reject, and the
        # replay is skipped whatever --replay asked for (no evidence, not an error).
        return _skipped(opts.mode)
    if opts.mode == "none":
        return _no_evidence("none", ReplayOutcome.NOT_RUN, "replay not run (--replay none)")
    seed = opts.seed
    if seed is None:
        raise UsageError(
            "--replay needs a seed: pass --seed N or set lanes.replay.seed in the review map"
        )
    from patchlane.lanes.replay.collect import CollectionError
    from patchlane.lanes.replay.run import draw_hash_seed

    clock = steps if steps is not None else Steps(Output(quiet=True))
    # The PYTHONHASHSEED and Hypothesis seed of every child this stage starts on the head
    # or the base (the run, and the checks beside it at the base, alike): drawn afresh for
    # each gate, never from the public seed, which a patch could be tuned to.
    hash_seed = draw_hash_seed()
    stage = _Stage(repo, cls, opts, (seed, hash_seed), freeze_report, out, clock)
    if opts.mode == "local":
        return _replay_here(stage)
    try:
        dep_map, note = _the_map(repo, cls, opts, seed, out, clock)
        selection = _select(repo, cls, opts, hash_seed, out, clock, (dep_map, note))
    except CollectionError as e:
        return _collection_failed(stage, e)
    atomic_write_bytes(opts.slice_path, selection.slice_bytes)
    if not selection.nodeids:
        return _with_slice(_empty(opts.mode), selection)
    if opts.mode != "local" and selection.private:
        path, why = selection.private[0]
        return _with_slice(
            _no_evidence(
                opts.mode,
                ReplayOutcome.PRIVATE,
                f"the slice needs a private file ({path}: {why}): run it locally (--replay local) or on your own runner",
            ),
            selection,
        )
    _refuse_environment_faults(repo, cls, selection, hash_seed, out)
    assert opts.command is not None  # noqa: S101 - the options of a command carry it
    with clock.step("replay: run"):
        # A receipt that came back is evidence whatever the command exited with (a runner
        # that ran the slice and saw a failure may well exit 1); verified below.
        problem = run_command(
            repo,
            opts.command,
            base=cls.base,
            head=cls.head,
            slice_path=opts.slice_path,
            receipt_path=opts.receipt_path,
            out=out,
        )
    if not opts.receipt_path.is_file():
        unreachable = _no_evidence(
            opts.mode, ReplayOutcome.UNREACHABLE, problem or "no receipt came back"
        )
        return _with_slice(unreachable, selection)
    report = _verified_and_checked(stage, selection, None, dep_map)
    return _unsplit_host_run(cls, opts, selection, report)


def _unsplit_host_run(
    cls: Classification, opts: ReplayOptions, selection: Selection, report: ReplayReport
) -> ReplayReport:
    """Return ``report`` with a review event (rule 6) when the slice holds tests of files
    the patch adds or changes and the host's receipt does not say that they ran apart from
    the base's tests, from this patch's merge base (``replay run --base``): in one process
    the patch's test code can change what the base's tests see (docs/architecture.md §4)."""
    from patchlane.formats.receipt import ReceiptError, parse_receipt

    if report.status == Status.FAIL:
        return report
    own = set(_added_or_changed(cls))
    ids = [n for n in selection.nodeids if n.split("::", 1)[0] in own]
    if not ids:
        return report
    try:
        receipt = parse_receipt(opts.receipt_path.read_bytes(), str(opts.receipt_path))
    except (OSError, ReceiptError):
        return report  # refused already, by the verification
    if receipt.split_base == cls.merge_base:
        return report
    return _with_events(
        report,
        f"the host ran the patch's own tests ({_quote(ids)}) in one pytest process with the "
        "base's tests (its receipt has no split_base of this merge base: run "
        "'patchlane replay run --base REF'); their code could change what the base's "
        "tests see",
    )


def _verified_and_checked(
    stage: _Stage,
    selection: Selection,
    run: RunResult | None,
    dep_map: DependencyMap | None,
    judging: tuple[Executor, Judging | None] | None = None,
    base_versions: Future[BaseVersions] | None = None,
) -> ReplayReport:
    """The receipt verified against the slice (under ``stage.seeds``: the public seed it
    answers to, and the hash seed of the gate's own children), then the gate's own checks
    (``_checked``) and, after a local run (``judging``: its pool, and the judgement of the
    tests that cannot fail if ``vacuity.start_early`` started it), the tests that cannot
    fail (``vacuity``). ``base_versions``: the run of the base version of the changed test
    files, started beside the slice (``_start_test_changes``)."""
    cls, seed, hash_seed = stage.cls, *stage.seeds
    # A local run's receipt is checked as the bytes this process rendered and wrote: read
    # back, they would only be what no one else could have written (the file is evidence).
    rendered = run.receipt.render() if run is not None else None
    verified = _verify(cls, stage.opts, seed, selection, stage.freeze_report, rendered)
    report = _with_events(_with_slice(verified, selection), *(verified.review_events or ()))
    from patchlane.lanes.replay.vacuity.lane import checked, start

    # Only after a local run, where this machine ran the head: a host's command gave a
    # receipt, and running the head's code here is what a command mode is there to avoid.
    # Not started yet: started now, before the checks at the base and beside them, which it
    # does not depend on (a verdict they turn red drops it, after its run ends).
    pool, started = judging if judging is not None else (None, None)
    if pool is not None and started is None and report.status == Status.PASS:
        with stage.clock.step("replay: tests that cannot fail"):
            started = start(
                stage.repo,
                cls,
                report,
                pool,
                reached_by=selection.reached_by,
                dep_map=dep_map,
                hash_seed=hash_seed,
                out=stage.out,
            )
    with stage.clock.step("replay: checks at the base"):
        report = _checked(stage, selection, run, report, dep_map, base_versions)
    if run is None or pool is None or report.status != Status.PASS:
        return report
    with stage.clock.step("replay: tests that cannot fail"):
        return checked(
            stage.repo,
            cls,
            report,
            started,
            reached_by=selection.reached_by,
            hash_seed=hash_seed,
            out=stage.out,
        )


def _select(
    repo: Path,
    cls: Classification,
    opts: ReplayOptions,
    hash_seed: int,
    out: Output,
    clock: Steps,
    the_map: tuple[DependencyMap | None, str],
) -> Selection:
    """Select the slice for the patch with ``the_map`` (the map, and its note), collecting
    under ``hash_seed``. Raises ``CollectionError`` when pytest cannot collect the head's
    suite."""
    from patchlane.lanes.replay.select import select_slice

    patch = cls.patch
    request = _slice_request(cls, opts, the_map)
    with clock.step("replay: selection"):
        return select_slice(
            repo, patch.review_map, request, base=patch.base, out=out, seed=hash_seed
        )


def _the_map(
    repo: Path, cls: Classification, opts: ReplayOptions, seed: int, out: Output, clock: Steps
) -> tuple[DependencyMap | None, str]:
    """The map the gate obtained before the lanes ran, else the one looked up now."""
    if opts.obtained is not None:
        return opts.obtained
    with clock.step("replay: dependency map"):
        return _dependency_map(repo, cls, opts, seed, out)


def _dependency_map(
    repo: Path, cls: Classification, opts: ReplayOptions, seed: int, out: Output
) -> tuple[DependencyMap | None, str]:
    """The merge base's dependency map and a note on it (``maprecord.obtain``)."""
    from patchlane.lanes.replay.maprecord import obtain

    review_map = cls.patch.review_map
    return obtain(
        repo,
        review_map,
        cls.merge_base,
        mode=opts.dep_map,
        cache=opts.dep_cache,
        timeout_s=opts.dep_map_timeout_s,
        seed=seed,
        out=out,
    )


def _checked(
    stage: _Stage,
    selection: Selection,
    run: RunResult | None,
    report: ReplayReport,
    dep_map: DependencyMap | None = None,
    base_versions: Future[BaseVersions] | None = None,
) -> ReplayReport:
    """Return the verified ``report`` with what the gate checks from outside the run: the
    plugins pytest loaded, skips and failures against the base, the patch's test changes,
    and the changed code no passing base test reaches. With ``dep_map`` (the merge base's),
    a node that passed when the map was recorded is known to pass at the base
    (``_known_at_base``) and is not run there again. The base's runs get the stage's hash
    seed: with ``--replay local`` the head run's, so that a node is compared under the same
    seed; after a command, the gate's own (the receipt's ``hash_seed`` is the host's word,
    and a host's choice must not decide what the base does). ``base_versions``: as
    ``_test_changes`` takes it."""
    repo, cls, hash_seed, out = stage.repo, stage.cls, stage.seeds[1], stage.out
    loaded = set(selection.plugin_files) | set(run.run.plugin_files if run else ())
    report = _plugins_outside_the_harness(cls, sorted(loaded), report)
    if run is not None:
        results = run.run.results
        report = dataclasses.replace(
            report,
            run_problems=tuple(run.run.problems),
            failed_why={n: results[n].why for n in report.failed if n in results},
        )
    known = _known_at_base(dep_map)
    if known is not None and selection.canary is not None:
        # A canary test runs without the tests that ran before it in the full suite: one
        # that depends on them fails here for no fault of the patch, which only a run at
        # the base, drawn the same way, can tell.
        known -= frozenset(selection.canary.nodeids)
    if report.status == Status.PASS:
        report = _skips_at_base(repo, cls, hash_seed, report, out, known)
    if report.status == Status.FAIL and run is not None and run.run.overran is not None:
        from patchlane.lanes.replay.testbound import judge_overrun

        report = judge_overrun(
            repo, cls.merge_base, report, run.run, hash_seed=hash_seed, build=_build(cls), out=out
        )
    if report.status == Status.FAIL:
        report = with_first_failure(_failures_at_base(repo, cls, hash_seed, report, out, known))
    if report.status == Status.FAIL and run is not None:  # a local run: its failures run again
        from patchlane.lanes.replay.rerun import judged_again

        report = judged_again(repo, cls, report, out, hash_seed=hash_seed, timeout_s=RUN_TIMEOUT_S)
    if report.status != Status.FAIL:
        report = _test_changes(repo, cls, hash_seed, selection, report, out, base_versions)
    unreached = unreached_code(cls, selection, frozenset(report.passed))
    report = dataclasses.replace(report, unreached=tuple(unreached))
    if unreached and report.status != Status.FAIL:
        report = _with_events(
            report,
            f"no test that the base has and that passed reaches {len(unreached)} changed "
            f"file(s) of the code under test ({_quote(unreached)}): the replay is no evidence "
            "for them",
        )
    return report


def with_first_failure(report: ReplayReport) -> ReplayReport:
    """Return a failed ``report`` whose reason also tells the first failing node that
    counts against the patch (not one that fails at the base as well) by what failed:
    pytest's crash message (``assert 2 == 3``) from ``failed_why``, so that the reject
    says which assertion, not only which node. Unchanged when it has no such node."""
    if report.status != Status.FAIL:
        return report
    excused = set(report.fail_at_base_too or ())
    whys = report.failed_why or {}
    first = next((n for n in report.failed if n not in excused and whys.get(n)), None)
    if first is None:
        return report
    return dataclasses.replace(report, reason=f"{report.reason}; first: {first}: {whys[first]}")


def _plugins_outside_the_harness(
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
        report = _with_events(
            report,
            f"pytest loaded {_quote(missed)} as a plugin and the patch changes it: a test "
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


def _known_at_base(dep_map: DependencyMap | None) -> frozenset[str] | None:
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


def _failures_at_base(
    repo: Path,
    cls: Classification,
    hash_seed: int,
    report: ReplayReport,
    out: Output,
    known: frozenset[str] | None = None,
) -> ReplayReport:
    """Only what the head changes counts against the patch: a node that fails at the base
    as well (run the same way, on this machine) is no evidence about the patch. Returns
    ``report`` with those nodes; when every failure is of that kind the replay gives no
    evidence (``undecided``), else it still fails. Nodes in ``known`` passed at the base
    when the dependency map was recorded: they are not run there again."""
    from patchlane.lanes.replay.basecheck import failures_at_base

    failed = list(report.failed)
    from_map, to_run = _split_known(failed, known)
    whys = report.failed_why or {}
    uncollected = frozenset(n for n in to_run if whys.get(n) == "not collected")
    also: list[str] = []
    if to_run:
        out.progress(f"replay: {len(to_run)} node(s) failed; running them at the base")
        also = list(
            failures_at_base(
                repo,
                cls.merge_base,
                to_run,
                hash_seed=hash_seed,
                timeout_s=RUN_TIMEOUT_S,
                uncollected=uncollected,
                build=_build(cls),
            )
        )
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
        reason=f"every failing node fails at the base as well ({_quote(also)}): a test that "
        "cannot pass here (environment, or already broken) is no evidence about the patch",
    )


def _refuse_environment_faults(
    repo: Path, cls: Classification, selection: Selection, hash_seed: int, out: Output
) -> None:
    """Raise ``EnvironmentFault`` (exit 2) when a test file of the slice cannot import a
    package at the base and the head alike: the environment's fault, not the patch's."""
    from patchlane.errors import EnvironmentFault
    from patchlane.lanes.replay.basecheck import environment_faults, fault_message

    errors = [e for e in selection.collect_errors if e.nodeid in selection.nodeids]
    if not any(e.missing for e in errors):
        return
    out.progress("replay: a test file does not import; checking the base")
    faults = environment_faults(
        repo,
        cls.merge_base,
        errors,
        hash_seed=hash_seed,
        timeout_s=RUN_TIMEOUT_S,
        build=_build(cls),
    )
    if faults:
        raise EnvironmentFault(fault_message(faults[0]))


def _skips_at_base(
    repo: Path,
    cls: Classification,
    hash_seed: int,
    report: ReplayReport,
    out: Output,
    known: frozenset[str] | None = None,
) -> ReplayReport:
    """A node the suite skipped at the head but that passes at the base was hidden by the
    patch: it fails the replay (rule 4). Returns ``report`` with those nodes (unchanged when
    the suite skipped nothing). Nodes in ``known`` passed at the base when the dependency
    map was recorded: hidden, without a run."""
    from patchlane.lanes.replay.basecheck import skips_that_run_at_base

    skipped = list(report.skipped_by_suite)
    if not skipped:
        return report
    from_map, to_run = _split_known(skipped, known)
    hidden = list(from_map)
    if to_run:
        out.progress(
            f"replay: {len(to_run)} node(s) skipped by the suite; running them at the base"
        )
        hidden += skips_that_run_at_base(
            repo,
            cls.merge_base,
            to_run,
            hash_seed=hash_seed,
            timeout_s=RUN_TIMEOUT_S,
            build=_build(cls),
        )
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
        f"them): {_quote(hidden)}",
    )


def _test_changes(
    repo: Path,
    cls: Classification,
    hash_seed: int,
    selection: Selection,
    report: ReplayReport,
    out: Output,
    base_versions: Future[BaseVersions] | None = None,
) -> ReplayReport:
    """Deleted tests and edited expectations: review events (rule 6, ``undecided``).
    Returns ``report`` with them (and with the review events listed, even none, once the
    patch's test files were checked). ``base_versions``: their run, started beside the
    slice (its result is taken, and its error raised, here)."""
    from patchlane.lanes.replay.basecheck import HeadSuite, changes_helpers, judged, test_changes

    changed = _changed_test_paths(repo, cls)
    report = dataclasses.replace(report, deleted_tests=(), edited_expectations=())
    if not changed:
        return report
    suite = HeadSuite(
        collected=frozenset(selection.collected),
        broken=frozenset(e.nodeid for e in selection.collect_errors),
        slice_ids=selection.nodeids,
    )
    if base_versions is not None and not changes_helpers(repo, cls.merge_base, changed):
        found = judged(changed, suite, base_versions.result())
    else:
        out.progress("replay: running the base version of the changed test files")
        found = test_changes(
            repo,
            cls.merge_base,
            cls.head,
            changed,
            suite,
            hash_seed=hash_seed,
            timeout_s=RUN_TIMEOUT_S,
            build=_build(cls),
        )
    report = dataclasses.replace(
        report,
        deleted_tests=tuple(found.deleted),
        edited_expectations=tuple(EditedTest(n, why) for n, why in found.edited),
    )
    events = []
    if found.deleted:
        events.append(
            f"the patch deletes {len(found.deleted)} test(s) collected at the base: "
            f"{_quote(list(found.deleted))}"
        )
    if found.edited:
        ids = [n for n, _ in found.edited]
        events.append(
            "the patch changes the expectations of tests it is judged by: the base version of "
            f"{len(ids)} test(s) fails at the head: {_quote(ids)}"
        )
    return _with_events(report, *events)


def _changed_test_paths(repo: Path, cls: Classification) -> list[ChangedPath]:
    """The paths the patch changes under the test roots (both sides of renames), as
    ``basecheck.changed_test_paths`` finds them by the base's test module patterns."""
    from patchlane.lanes.replay.basecheck import ChangedPath, changed_test_paths
    from patchlane.project.harness import module_patterns_at

    sides: list[ChangedPath] = []
    for f in cls.files:
        sides.append(ChangedPath(f.status, f.path))
        if f.old_path is not None:
            sides.append(ChangedPath(f.status, f.old_path, renamed_to=f.path))
    patterns = module_patterns_at(repo, cls.merge_base)
    return changed_test_paths(sides, cls.map_source.review_map.replay.tests, patterns)


def _start_test_changes(stage: _Stage, pool: Executor) -> Future[BaseVersions] | None:
    """Start the run of the base version of the changed test files at the head in ``pool``,
    beside the slice: it needs the head's commit and the base's files, not the slice, when
    no helper under the test roots changed (else ``None``: it runs after the slice, with
    it; so it does when nothing changed under the test roots). Its result is only read when
    the verdict still needs it (``_test_changes``)."""
    from patchlane.lanes.replay.basecheck import base_versions, changes_helpers

    repo, cls = stage.repo, stage.cls
    changed = _changed_test_paths(repo, cls)
    if not changed or changes_helpers(repo, cls.merge_base, changed):
        return None
    stage.out.progress(
        "replay: running the base version of the changed test files, beside the slice"
    )
    return pool.submit(
        base_versions, repo, cls.merge_base, cls.head, changed, (),
        hash_seed=stage.seeds[1], timeout_s=RUN_TIMEOUT_S, build=_build(cls),
    )  # fmt: skip


def _build(cls: Classification) -> Build | None:
    """The map's build command, which every materialised tree runs before its tests."""
    from patchlane.lanes.replay.compiled import build_of

    return build_of(cls)


def _quote(ids: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _replay_here(stage: _Stage) -> ReplayReport:
    """``--replay local``: one pytest child in a detached checkout of the head commit
    collects the candidate test files, this process selects the slice from what it
    collected (written and hashed before any test runs), and the child runs exactly that
    (``chosen``), under the drawn hash seed of ``stage.seeds`` (the public seed, the hash seed);
    the patch's own test files are collected and run in processes of their own
    (``split``). The receipt is built, signed when a key is configured, then verified like
    any other. The tests that cannot fail (``vacuity``) are judged in a thread of their own
    beside the slice, or beside the checks at the base.
    Raises what ``replay`` raises."""
    from patchlane.lanes.replay.testbound import carry

    # Three threads, beside the slice: the tests that cannot fail (their run, the literals
    # of the base's tests) and the base version of the changed test files
    # (``_start_test_changes``).
    with ThreadPoolExecutor(max_workers=3, initializer=carry()) as pool:  # the bound too
        return _replay_here_with(stage, pool)


def _replay_here_with(stage: _Stage, pool: Executor) -> ReplayReport:
    """``_replay_here`` with its thread ``pool`` for the tests that cannot fail."""
    from patchlane.formats.receipt import utc_stamp
    from patchlane.lanes.replay.collect import CollectionError
    from patchlane.lanes.replay.runprogress import logged, shown
    from patchlane.lanes.replay.select import base_collector, decide_slice, plan_slice
    from patchlane.lanes.replay.split import split_and_run

    repo, cls, opts, out, clock = stage.repo, stage.cls, stage.opts, stage.out, stage.clock
    seed, hash_seed = stage.seeds
    dep_map, note = _the_map(repo, cls, opts, seed, out, clock)
    chosen: list[Selection] = []
    freeze_path = opts.receipt_path.parent / "freeze-report.json"
    with _scratch(pool) as tmp:
        # The head commit's bytes, not the work tree: the receipt names that commit.
        with clock.step("replay: selection"):
            plan = plan_slice(
                repo,
                cls.patch.review_map,
                Path(tmp) / "head",
                _slice_request(cls, opts, (dep_map, note)),
                collects_at_base=base_collector(
                    repo, cls.patch.review_map, cls.merge_base, hash_seed, RUN_TIMEOUT_S
                ),
            )
            not_run = _check_out(repo, cls.head, Path(tmp) / "run", opts.mode)
            if not_run is not None:
                return not_run
        out.progress(plan.progress)
        # Built where the tests run: the checkout (selection read the copy beside it).
        head_build = _build_head(cls, Path(tmp) / "run", out, clock)
        from patchlane.lanes.replay.vacuity.lane import start_early, start_with_slice

        # Beside the slice's run: it needs only the base's map and the head's commit, in a
        # checkout of its own; only the tests that pass in the slice are judged.
        early: Judging | None = None
        if dep_map is not None:
            with clock.step("replay: tests that cannot fail"):
                early = start_early(repo, cls, dep_map, pool, hash_seed=hash_seed, out=out)
        base_versions = _start_test_changes(stage, pool)

        def choose(collected: Collected) -> tuple[str, ...] | None:
            nonlocal early
            chosen.append(decide_slice(plan, collected))
            to_run = _to_run(repo, cls, opts, hash_seed, chosen[0], out)
            if early is None and to_run:
                # The map could not choose before the head's collection: the slice's tests
                # that reach the changed code can, before the slice runs and beside it,
                # rather than after it (``vacuity.start``).
                early = start_with_slice(
                    repo,
                    cls,
                    to_run,
                    pool,
                    reached_by=chosen[0].reached_by,
                    dep_map=dep_map,
                    hash_seed=hash_seed,
                    out=out,
                )
            return to_run

        started = utc_stamp()
        begun = time.perf_counter()
        try:
            with shown(logged(out)):  # tests done of the slice and the one running, every 10 s
                ran = split_and_run(
                    Path(tmp) / "run",
                    _with_preload(plan.scope, dep_map, cls),
                    choose,
                    _own_tests(cls, plan, Path(tmp) / "head"),  # run apart (``split``)
                    hash_seed=hash_seed,
                    timeout_s=RUN_TIMEOUT_S,
                    freeze_report=freeze_path if freeze_path.is_file() else None,
                )
        except CollectionError as e:
            return _collection_failed(stage, e)
        # The choice was made while the child waited: selection's time, not the run's.
        clock.add("replay: selection", ran.choose_s)
        clock.add("replay: run", max(time.perf_counter() - begun - ran.choose_s, 0.0))
        widened = None
        if ran.run is not None and ran.run.left:
            with clock.step("replay: state left behind"):
                widened = _widen(stage, Path(tmp) / "run", chosen[0], ran.run, dep_map)
    selection = chosen[0]
    if ran.run is None:
        return _with_slice(_empty(opts.mode), selection)
    result = _local_receipt(cls, opts, stage.seeds, selection, ran.run, started)
    report = _verified_and_checked(stage, selection, result, dep_map, (pool, early), base_versions)
    from patchlane.lanes.replay.widen import with_widened

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


def _with_preload(scope: Scope, dep_map: DependencyMap | None, cls: Classification) -> Scope:
    """``scope`` with the modules of the code under test that the base's whole suite
    imported (the dependency map's files run at import, neither tests nor under the test
    roots), when the map narrowed what the child collects: the full run has them loaded
    when the slice's tests run, so the slice's process must too (``child.leftover``)."""
    if dep_map is None or scope.only_files is None:
        return scope
    tests = {t.split("::", 1)[0] for t in dep_map.tests}
    roots = tuple(r.rstrip("/") + "/" for r in cls.map_source.review_map.replay.tests)
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
    stage: _Stage, tree: Path, selection: Selection, run: TestRun, dep_map: DependencyMap | None
) -> Widened | None:
    """Widen the slice by what ``run`` left behind (``widen``), in the head's checkout
    ``tree``. Raises what ``widen.widen`` raises."""
    from patchlane.lanes.replay.widen import Sides, suite_files, widen

    stage.out.progress("replay: the slice left state behind; comparing with the base")
    freeze_path = stage.opts.receipt_path.parent / "freeze-report.json"
    sides = Sides(
        tree=tree,
        repo=stage.repo,
        merge_base=stage.cls.merge_base,
        build=_build(stage.cls),
        hash_seed=stage.seeds[1],
        timeout_s=RUN_TIMEOUT_S,
        freeze_report=freeze_path if freeze_path.is_file() else None,
    )
    known = dep_map.tests if dep_map is not None else ()
    files = suite_files(selection.collected, known)
    return widen(sides, selection.nodeids, files, run)


def _local_receipt(
    cls: Classification,
    opts: ReplayOptions,
    seeds: tuple[int, int],
    selection: Selection,
    run: TestRun,
    started: str,
) -> RunResult:
    """The receipt of a local run (``seeds``: the public seed, the drawn hash seed), signed
    when a key is configured, written to the evidence directory."""
    from patchlane.lanes.replay.run import RunResult, receipt_for

    seed, hash_seed = seeds
    receipt = receipt_for(
        run, seed=seed, hash_seed=hash_seed, slice_sha256=selection.sha256, head=cls.head,
        host_role="local", started=started,
        canary=None if selection.canary is None else selection.canary.nodeids,
    )  # fmt: skip
    result = _signed(RunResult(receipt, run))
    atomic_write_bytes(opts.receipt_path, result.receipt.render())
    return result


def _with_build_events(report: ReplayReport, head_build: BuildResult | None) -> ReplayReport:
    """``report`` with the review event of a head build that wrote what the diff never
    showed (``compiled.wrote_events``), if it did."""
    from patchlane.lanes.replay.compiled import wrote_events

    wrote = wrote_events(head_build)
    return _with_events(report, *wrote) if wrote else report


def _build_head(cls: Classification, tree: Path, out: Output, clock: Steps) -> BuildResult | None:
    """Run the map's build command in the materialised head ``tree`` before pytest
    collects (docs/architecture.md §2, "Compiled code"); return its result, ``None``
    without one. Raises ``BuildFailed`` when it fails."""
    from patchlane.lanes.replay.compiled import build_of
    from patchlane.project.build import built

    build = build_of(cls)
    if build is None:
        return None
    out.progress(f"replay: building the head ({one_line(build.command)[:120]})")
    with clock.step("replay: build"):
        return built(build, tree, "head", audit=True)


def _own_tests(cls: Classification, plan: SlicePlan, tree: Path) -> tuple[str, ...]:
    """The patch's own test files in the materialised head ``tree`` (``split``)."""
    from patchlane.lanes.replay.split import own_test_files

    return own_test_files(tree, _added_or_changed(cls), plan.scope, plan.selector.patterns)


def _added_or_changed(cls: Classification) -> list[str]:
    """The head's paths the patch adds, changes, copies or renames to."""
    return [f.path for f in cls.files if f.status[:1] != "D"]


def _check_out(repo: Path, head: str, dest: Path, mode: str) -> ReplayReport | None:
    """Make ``dest`` the run's tree: a real detached checkout of ``head`` (``.git`` present,
    as where the project runs its tests), beside the materialised copy selection reads,
    which no test can write (docs/architecture.md §2). Returns ``None``, or the report of a
    replay that cannot run because git cannot check the head out (never a pass)."""
    from patchlane.errors import GitError
    from patchlane.infra import git, sandbox

    try:
        git.checkout_detached(repo, head, dest, branch=git.branch_for(repo, head))
    except GitError as e:
        why = f"replay not run: git cannot check out the head ({one_line(str(e))[:300]})"
        return _no_evidence(mode, ReplayOutcome.NOT_RUN, why)
    # Its tests see it at the repository's path, as in the user's checkout (infra.origins).
    sandbox.judged(dest, repo)
    return None


def _slice_request(
    cls: Classification, opts: ReplayOptions, the_map: tuple[DependencyMap | None, str]
) -> SliceRequest:
    """The patch as selection takes it, with ``the_map`` (the map, and its note)."""
    from patchlane.lanes.replay.select import SliceRequest

    dep_map, note = the_map
    return SliceRequest(
        head=cls.head,
        merge_base=cls.patch.merge_base,
        changed_paths=cls.patch.changed_paths,
        failure_log=opts.failure_log,
        all_tests=False,
        dep_map=dep_map,
        dep_map_note=note,
    )


def _to_run(
    repo: Path,
    cls: Classification,
    opts: ReplayOptions,
    hash_seed: int,
    selection: Selection,
    out: Output,
) -> tuple[str, ...] | None:
    """Write the chosen slice; return its node ids to run, or ``None`` (an empty slice).
    Raises ``EnvironmentFault`` as ``_refuse_environment_faults`` does."""
    atomic_write_bytes(opts.slice_path, selection.slice_bytes)
    if not selection.nodeids:
        return None
    _refuse_environment_faults(repo, cls, selection, hash_seed, out)
    from patchlane.lanes.replay.testbound import in_force

    bound = in_force()
    out.progress(
        f"replay: running {len(selection.nodeids)} node id(s) with pytest"
        + (f", {bound}" if bound else "")
    )
    return selection.nodeids


def _signed(result: RunResult) -> RunResult:
    """``result`` with its receipt signed by the configured key, if there is one."""
    from patchlane.lanes.replay.signing import configured_private_key, sign

    key = configured_private_key(None)
    if key is None:
        return result
    return dataclasses.replace(result, receipt=sign(result.receipt, key))


def _verify(
    cls: Classification,
    opts: ReplayOptions,
    seed: int,
    selection: Selection,
    freeze_report: FreezeReport,
    rendered: bytes | None = None,
) -> ReplayReport:
    """The receipt verified against ``selection``'s slice: ``rendered`` (a local run's, in
    memory), else the receipt file a command left."""
    from patchlane.lanes.replay.signing import load_public_key
    from patchlane.lanes.replay.verify import Expectations, replay_report, verify_receipt

    review_map = cls.map_source.review_map
    public_key = load_public_key(opts.public_key) if opts.public_key is not None else None
    verification = verify_receipt(
        selection.slice_bytes,
        opts.receipt_path.read_bytes() if rendered is None else rendered,
        freeze_report,
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
        return _with_events(report, why)
    return report
