"""``gate``: classify, run the local lanes, then replay only when they are all green.

Every lane is evaluated on the head commit's bytes (read from git), not on whatever the
work tree holds, because the verdict, the receipt and the review note all name that commit.
Replay (``lanes.replay.lane``) runs only when every local lane is green, and what comes back
is verified before it is believed.
"""

from __future__ import annotations

import dataclasses
import os
import stat
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from patchlane.errors import LINK_REFUSED, InputError, LockError, UnsafeWriteError, UsageError
from patchlane.formats.fixture_report import FixtureReport
from patchlane.formats.freeze_report import FreezeReport
from patchlane.formats.property_report import PropertyReport
from patchlane.formats.status import Status
from patchlane.formats.verdict_file import IsolationFacts, Verdict
from patchlane.gate.reports import FILE_NAMES, LaneReports
from patchlane.gate.review import build_note
from patchlane.gate.verdict import decide
from patchlane.infra.sandbox import isolation
from patchlane.infra.steps import CACHED_RUNS, Steps
from patchlane.infra.ui import Output
from patchlane.inputs.jsonio import atomic_write_text, write_json
from patchlane.lanes.fixture import lane as fixture_lane
from patchlane.lanes.freeze import lane as freeze_lane
from patchlane.lanes.freeze.audit import records_in_play
from patchlane.lanes.freeze.failure_log import read_failure_log
from patchlane.lanes.freeze.source import load_base_registry
from patchlane.lanes.property import DEFAULT_MUTANTS
from patchlane.lanes.property.lane import PropertyRequest, run_property_lane
from patchlane.lanes.replay.lane import ReplayOptions, obtain_map, replay
from patchlane.lanes.replay.maprecord import RECORD_TIMEOUT_S
from patchlane.project.classify import Classification, classify
from patchlane.project.config import DEFAULT_CASES, ReviewMap
from patchlane.project.replay_command import ReplayCommand, parse_replay

if TYPE_CHECKING:
    from collections.abc import Mapping

    from patchlane.formats.depmap import DependencyMap
    from patchlane.formats.replay_report import ReplayReport
    from patchlane.lanes.freeze.source import Registry


@dataclass(frozen=True)
class SharedBase:
    """Work on the base done once for many gates against it (``patchlane triage``): the
    dependency map of each merge base, obtained (``share_map``) before any of those gates
    ran a head's code."""

    maps: Mapping[str, tuple[DependencyMap | None, str] | None]


@dataclass(frozen=True)
class GateOptions:
    """What ``patchlane gate`` was asked to do."""

    base: str
    head: str = "HEAD"
    seed: int | None = None
    cases: int | None = None
    today: date | None = None
    failure_log: Path | None = None
    mutants: int | None = None
    replay: str = "none"
    public_key: Path | None = None
    out_dir: Path = Path(".patchlane")
    map_option: str | None = None
    # The base's dependency map: "auto" (use the cached one, record it on first use) or
    # "off"; where maps are kept (None: ``patchlane.infra.cache.default_cache``).
    dep_map: str = "off"
    dep_cache: Path | None = None
    dep_map_timeout_s: float = RECORD_TIMEOUT_S
    # ``--test-timeout``: each replayed test's bound (``None``: derived from the base's
    # recorded durations, ``lanes.replay.testbound``).
    test_timeout_s: float | None = None
    # Reuse property runs whose inputs are unchanged (``lanes.property.cache.results``).
    property_cache: bool = True
    # The patch file ``head`` was applied from (``gate --patch``), named in the evidence.
    applied_from: str | None = None
    # The base's work done once for many gates (``None``: this gate does its own).
    shared: SharedBase | None = None


@dataclass(frozen=True)
class GateResult:
    """What one gate run found: the verdict, where the evidence went, the classification and
    the four lane reports."""

    verdict: Verdict
    out_dir: Path
    classification: Classification
    reports: LaneReports


@dataclass(frozen=True)
class GateContext:
    """One gate run's inputs, settled once after the patch is classified and before any lane
    runs: built from the ``GateOptions``, the classification and what follows from them.
    The lanes know nothing of it (they import no gate); the gate hands each lane's entry
    point the values it takes."""

    repo: Path
    cls: Classification
    # ``GateOptions.seed`` and ``cases``, else the review map's (``_seed_and_cases``).
    seed: int | None
    cases: int
    mutants: int | None
    property_cache: bool
    # The review date: ``GateOptions.today``, else today's UTC date.
    today: date
    failure_log: frozenset[str]
    # The base's freeze registry (``None``: the map has no freeze lane) and whether any of
    # its records is in play for this patch (``freezes_in_play``).
    registry: Registry | None
    in_play: bool
    # The replay lane's options, with the dependency map already obtained.
    replay: ReplayOptions
    out_dir: Path
    out: Output
    steps: Steps


def today_utc() -> date:
    """Return the current UTC date (the default for ``--today``)."""
    return datetime.now(UTC).date()


def property_report(ctx: GateContext) -> PropertyReport:
    """Return the property lane's report: the base's and the head's property modules run
    against the head commit's code, in isolated child processes, then the oracle audit
    (the patch's own when it reaches a property, else the base's; not run once the lane
    is red, the report saying ``stopped``). It runs when the patch touches the lane or
    when a freeze in play (``ctx.in_play``) needs its required properties' results.
    ``ctx.property_cache``: reuse the results of runs whose inputs are unchanged and the
    base's audit. Raises what ``run_property_lane`` raises."""
    cls, seed, cases = ctx.cls, ctx.seed, ctx.cases
    review_map = cls.map_source.review_map
    lane = cls.lanes["property"]
    run_it = lane.applicable or ctx.in_play
    if review_map.property is None or not run_it or seed is None:
        modules = review_map.property.modules if review_map.property else ()
        return PropertyReport.not_applicable(lane.reason, seed, cases, modules)
    request = PropertyRequest(
        seed=seed,
        cases=cases,
        mutants=DEFAULT_MUTANTS if ctx.mutants is None else ctx.mutants,
        changed=cls.changed_paths,
        result_cache=ctx.property_cache,
        # A red lane decides the verdict: the audit, which only informs, is not run.
        audit_red=False,
    )
    # The property lane also runs without a patch (the work tree, one commit), so it takes
    # the patch's revisions rather than a ``Patch``.
    return run_property_lane(
        ctx.repo, review_map, request, base=cls.base, head=cls.head, out=ctx.out
    )


def fixture_report(ctx: GateContext) -> FixtureReport:
    """Return the fixture lane's report: the head commit's bytes against its locks."""
    lane = ctx.cls.lanes["fixture"]
    try:
        # A map without a fixture lane gives ``not_applicable``, saying so.
        report = fixture_lane.check_patch(ctx.repo, ctx.cls.patch)
    except LockError as e:
        # The lock is patch-controlled: a lock that cannot be read safely is red (rule 2),
        # not a usage error a hostile patch could hide behind.
        report = fixture_lane.report_for_lock_error(e)
    if report.status == Status.PASS and not lane.applicable:
        report = dataclasses.replace(
            report,
            status=Status.NOT_APPLICABLE,
            reason=f"{lane.reason}; the lock still matches the head commit",
        )
    return report


def freeze_report(ctx: GateContext, prop: PropertyReport, fixture: FixtureReport) -> FreezeReport:
    """Return the freeze lane's report: the base's registry audited by rules 1-6 against
    the other local lanes' reports.

    ``ctx.registry`` is ``base_registry``'s answer (``None``: the map has no freeze lane).
    """
    if ctx.registry is None:
        return FreezeReport.not_applicable(ctx.cls.lanes["freeze"].reason)
    return freeze_lane.audit(
        ctx.repo,
        ctx.cls.patch,
        today=ctx.today,
        property_report=prop,
        fixture_report=fixture,
        failure_log=ctx.failure_log,
        registry=ctx.registry,
    )


def replay_report(ctx: GateContext, local_green: bool, frz: FreezeReport) -> ReplayReport:
    """Return the replay lane's report (``lanes.replay.lane.replay``: skipped unless
    ``local_green``; ``frz`` grants its freeze skips). Raises what ``replay`` raises."""
    return replay(ctx.repo, ctx.cls, ctx.replay, local_green, frz, ctx.out, ctx.steps)


def base_registry(repo: Path, cls: Classification) -> Registry | None:
    """Return the base's freeze registry, read once per gate run (``None``: no freeze lane)."""
    review_map = cls.map_source.review_map
    if review_map.freeze is None:
        return None
    return load_base_registry(repo, review_map, cls.base, cls.head)


def freezes_in_play(
    registry: Registry | None, cls: Classification, failure_log: frozenset[str]
) -> bool:
    """Return whether any base freeze record is in play (rule 5) for this patch.

    Rule 3 needs the required properties' results, so the property lane must run whenever a
    freeze is in play, even for a patch that touches no property path.
    """
    return registry is not None and bool(records_in_play(registry, cls.changed_paths, failure_log))


def _check_out_dir(repo: Path, out_dir: Path) -> None:
    """Refuse an evidence directory that a committed link could redirect.

    Walks ``out_dir`` (absolute) one component at a time with ``lstat``. Refused with
    ``UnsafeWriteError`` (exit 2), before anything is created, cleared or written: the
    directory itself if it is a link (wherever it is: the user asked for that path, as for
    ``--out FILE``); any component inside the repository that is a link (a hostile patch can
    commit ``.patchlane -> src/billing``, or ``-> /home/user/.ssh``); each evidence file
    name in it that is a link (``.patchlane/verdict.json -> ../src/app.py``); and an
    existing component or evidence file of the wrong kind. A link above the repository
    (``/tmp`` on macOS, a linked home directory) is the user's own and is followed. Returns
    nothing.

    The check and the writes that follow are a race (TOCTOU); each write re-checks its own
    name and never writes through a link (``jsonio.atomic_write_bytes``), so the window only
    matters to code running as the same user, which could write anywhere anyway.
    """
    if not out_dir.is_absolute():
        out_dir = Path.cwd() / out_dir  # joined, not normalised: ``..`` is resolved below
    root = Path(os.path.realpath(repo))
    # ``current`` is always a real (link-free) path, so ``..`` and the inside-the-repository
    # test mean what the file system means, not what the spelling suggests.
    current = Path(out_dir.anchor)
    parts = out_dir.parts[1:]
    for i, part in enumerate(parts):
        if part == "..":
            current = current.parent
            continue
        candidate = current / part
        try:
            st = os.lstat(candidate)
        except FileNotFoundError:
            return  # mkdir creates the rest as real directories, and it holds no evidence
        except OSError as e:
            raise InputError(os.fspath(candidate), f"cannot inspect: {e.strerror or e}") from e
        shown = out_dir if i == len(parts) - 1 else candidate
        if stat.S_ISLNK(st.st_mode):
            if i == len(parts) - 1 or candidate == root or root in candidate.parents:
                raise UnsafeWriteError(os.fspath(shown), LINK_REFUSED)
            current = Path(os.path.realpath(candidate))
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise UnsafeWriteError(os.fspath(shown), "is not a directory")
        current = candidate
    for name in FILE_NAMES.values():
        path = out_dir / name
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        except OSError as e:
            raise InputError(os.fspath(path), f"cannot inspect: {e.strerror or e}") from e
        if stat.S_ISLNK(st.st_mode):
            raise UnsafeWriteError(os.fspath(path), LINK_REFUSED)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeWriteError(os.fspath(path), "is not a regular file")


def prepare_out_dir(repo: Path, out_dir: Path) -> Path:
    """Return ``out_dir`` (relative: to ``repo``) made absolute and created, after
    ``_check_out_dir``. Raises ``UnsafeWriteError`` or ``InputError`` before anything is
    created."""
    out_dir = out_dir if out_dir.is_absolute() else repo / out_dir
    _check_out_dir(repo, out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(os.fspath(out_dir), f"cannot create: {e.strerror or e}") from e
    return out_dir


def _clear(out_dir: Path) -> None:
    # A receipt or verdict left from an earlier run must never be read as this run's.
    # ``_check_out_dir`` ran first: every name here is a regular file or absent, and
    # unlink would remove a link, never its target, should one appear meanwhile.
    for name in FILE_NAMES.values():
        (out_dir / name).unlink(missing_ok=True)


def run_gate(repo: Path, opts: GateOptions, out: Output) -> GateResult:
    """Run the whole gate on ``merge-base(base, head)..head`` and write the evidence files.

    Returns the ``GateResult``. Raises ``GitError``/``MapError``/``UsageError`` for input
    that makes a verdict impossible (unknown ref, shallow clone, malformed map, bad options),
    and ``UnsafeWriteError`` for an out dir a link could redirect (see ``_check_out_dir``),
    before anything is cleared or written.
    """
    ctx = _context(repo, opts, out)
    prop, fix, frz, rep = _lanes(ctx)
    summary = ctx.cls.summary()
    verdict = _completed(
        decide(prop, fix, frz, rep, summary.facts, isolation_facts(ctx.cls)),
        rep,
        ctx.steps.timings(),
    )
    write_json(ctx.out_dir / FILE_NAMES["verdict"], verdict.to_json())
    reports = LaneReports(property=prop, fixture=fix, freeze=frz, replay=rep)
    note = build_note(summary, reports, verdict)
    atomic_write_text(ctx.out_dir / FILE_NAMES["review"], note.to_markdown())
    return GateResult(verdict=verdict, out_dir=ctx.out_dir, classification=ctx.cls, reports=reports)


def _context(repo: Path, opts: GateOptions, out: Output) -> GateContext:
    """Classify the patch (into a checked, cleared out dir that now holds the
    classification) and return the context every later step of the gate takes, its
    dependency map obtained. Raises what ``run_gate`` raises."""
    command = parse_replay(opts.replay)
    out_dir = prepare_out_dir(repo, opts.out_dir)
    _clear(out_dir)

    steps = Steps(out)
    with steps.step("classify"):
        # A file the replay command names is a control file (docs/architecture.md §2).
        cls = classify(
            repo, opts.base, opts.head, opts.map_option, opts.applied_from, replay_command=command
        )
    if command is not None:
        command.refuse_work_tree_files(repo, (cls.base, cls.head))
    write_json(out_dir / FILE_NAMES["classify"], cls.to_json())
    seed, cases = _seed_and_cases(opts, cls.map_source.review_map)

    failure_log = frozenset[str]()
    if opts.failure_log is not None:
        failure_log = read_failure_log(opts.failure_log)
    registry = base_registry(repo, cls)
    in_play = freezes_in_play(registry, cls, failure_log)
    replay_opts = _replay_options(opts, out_dir, seed, failure_log, command)
    with steps.step("replay: dependency map"):
        # Before any lane runs the head's code, which could write a map into the cache.
        replay_opts = dataclasses.replace(
            replay_opts, obtained=_obtained(repo, cls, opts.shared, replay_opts, out)
        )
    return GateContext(
        repo=repo,
        cls=cls,
        seed=seed,
        cases=cases,
        mutants=opts.mutants,
        property_cache=opts.property_cache,
        today=opts.today or today_utc(),
        failure_log=failure_log,
        registry=registry,
        in_play=in_play,
        replay=replay_opts,
        out_dir=out_dir,
        out=out,
        steps=steps,
    )


def _lanes(
    ctx: GateContext,
) -> tuple[PropertyReport, FixtureReport, FreezeReport, ReplayReport]:
    """Run each lane once, one after the other (the replay only when every local lane is
    green), write each report, and return the four in the verdict's reading order. Raises
    what the lanes raise."""
    steps = ctx.steps
    with steps.step("property lane"):
        prop = property_report(ctx)
    if (use := prop.cache) is not None:
        steps.count(CACHED_RUNS, use.hits, use.hits + use.misses)
    with steps.step("fixture lane"):
        fix = fixture_report(ctx)
    write_json(ctx.out_dir / FILE_NAMES["fixture"], fix.to_json())
    with steps.step("freeze lane"):
        frz = freeze_report(ctx, prop, fix)
    write_json(ctx.out_dir / FILE_NAMES["freeze"], frz.to_json())
    local_green = all(r.status.green for r in (prop, fix, frz))
    rep = replay_report(ctx, local_green, frz)
    write_json(ctx.out_dir / FILE_NAMES["property"], prop.to_json())
    write_json(ctx.out_dir / FILE_NAMES["replay"], rep.to_json())
    return prop, fix, frz, rep


def _completed(verdict: Verdict, rep: ReplayReport, timings: Mapping[str, float]) -> Verdict:
    """``verdict`` with the gate's ``timings`` and, when the replay ran, its canary beside
    it (no part of the decision)."""
    return dataclasses.replace(verdict, timings=timings, canary=None if rep.skipped else rep.canary)


def isolation_facts(cls: Classification) -> IsolationFacts:
    """Which isolation this machine's children get, and whether the deciding (base's) map
    requires the kernel sandbox."""
    layers = isolation()
    required = cls.map_source.review_map.isolation == "required"
    return IsolationFacts(layers.kind, layers.describe(), required)


def _obtained(
    repo: Path,
    cls: Classification,
    shared: SharedBase | None,
    replay_opts: ReplayOptions,
    out: Output,
) -> tuple[DependencyMap | None, str] | None:
    """The dependency map for this gate: the shared one of its merge base, else
    ``obtain_map``'s (for ``replay_opts.seed``)."""
    if shared is not None and cls.merge_base in shared.maps:
        return shared.maps[cls.merge_base]
    return obtain_map(repo, cls, replay_opts, replay_opts.seed, out)


def share_map(
    repo: Path, opts: GateOptions, out: Output
) -> tuple[str, tuple[DependencyMap | None, str] | None]:
    """Return the merge base of ``opts.base`` and ``opts.head`` and the dependency map a gate
    of that head would obtain (``obtain_map``), for a ``SharedBase``. Runs no head code: call
    it for every head before any gate that shares the result starts. Raises what
    ``classify`` and ``obtain_map`` raise."""
    cls = classify(repo, opts.base, opts.head, opts.map_option)
    seed, _ = _seed_and_cases(opts, cls.map_source.review_map)
    replay_opts = _replay_options(opts, opts.out_dir, seed, frozenset(), parse_replay(opts.replay))
    return cls.merge_base, obtain_map(repo, cls, replay_opts, seed, out)


def _replay_options(
    opts: GateOptions,
    out_dir: Path,
    seed: int | None,
    failure_log: frozenset[str],
    command: ReplayCommand | None,
) -> ReplayOptions:
    """The replay lane's options (``command``: ``opts.replay`` checked); its slice and
    receipt go into ``out_dir``."""
    return ReplayOptions(
        mode=opts.replay,
        command=command,
        seed=seed,
        failure_log=failure_log,
        public_key=opts.public_key,
        slice_path=out_dir / FILE_NAMES["replay_slice"],
        receipt_path=out_dir / FILE_NAMES["receipt"],
        dep_map=opts.dep_map,
        dep_cache=opts.dep_cache,
        dep_map_timeout_s=opts.dep_map_timeout_s,
        test_timeout_s=opts.test_timeout_s,
    )


def _seed_and_cases(opts: GateOptions, review_map: ReviewMap) -> tuple[int | None, int]:
    lane = review_map.property
    seed = opts.seed if opts.seed is not None else review_map.seed
    cases = opts.cases if opts.cases is not None else (lane.cases if lane else DEFAULT_CASES)
    if lane is not None and seed is None:
        raise UsageError("no seed: pass --seed N or set lanes.property.seed in the review map")
    return seed, cases
