"""The property lane: materialise base and head, then run its steps, each a function of
frozen inputs that returns a frozen result: ``plan`` (the run jobs and the report's order
of properties), ``run`` (the children, or the result cache), ``outcomes`` (the judge
step), ``faults`` (whose fault an import that failed is), and ``audit`` (the oracle audit:
the patch's own, or the base's when the patch reaches no property); then build the report
from what they returned. Every step runs to its end before the next starts.

Trust (docs/architecture.md §2): the deciding map is the caller's (the base's); each property module
runs twice, from the base (its property packages first on ``sys.path``, then the head's
code) and from the head, and a property fails if either run fails. The list of properties
each run must report on comes from parsing the module's source in this process, never from
the child, and a child's word counts only when its result channel is complete and
well-formed (see ``infra.process`` and ``child.properties``).
"""

from __future__ import annotations

import importlib.util
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from patchlane.errors import MapError, UsageError
from patchlane.formats.property_report import (
    MODULE_LEVEL,
    STOPPED,
    Failure,
    IsolationInfo,
    PropertyReport,
    PropertyRun,
    status_and_reason,
)
from patchlane.infra.bytecode import process_pycache
from patchlane.infra.cache import default_cache
from patchlane.infra.cachekey import load_or_create_key
from patchlane.infra.sandbox import Isolation, network_layers
from patchlane.infra.sandbox import isolation as sandbox_isolation
from patchlane.infra.ui import Output
from patchlane.lanes.property import DEFAULT_MUTANTS
from patchlane.lanes.property.audit import ORACLE_MODULE, Audited, audit
from patchlane.lanes.property.cache import audits
from patchlane.lanes.property.cache import results as resultcache
from patchlane.lanes.property.faults import HYPOTHESIS_FIX, Checked, check
from patchlane.lanes.property.jobs import SOURCES, Context
from patchlane.lanes.property.outcomes import IMPORT_FAILED, Outcomes, judge_runs
from patchlane.lanes.property.plan import Plan, plan
from patchlane.lanes.property.run import Ran, run
from patchlane.lanes.property.trees import Trees, materialise_trees
from patchlane.project.config import ReviewMap

__all__ = [
    "HYPOTHESIS_FIX",
    "IMPORT_FAILED",
    "ORACLE_MODULE",
    "PropertyRequest",
    "run_property_lane",
]


@dataclass(frozen=True)
class PropertyRequest:
    """What one property lane run is asked to do, whatever the revisions it runs on.

    ``seed`` and ``cases``: the properties' seed and cases per property. ``mutants`` bounds
    the oracle audit's mutants per property (0: no mutation). ``only`` runs one property
    name; ``case`` (with ``only``) one case of it. ``changed`` (a patch's changed paths):
    the patch gets its own audit only when one of them is a head property module or a file
    it imports (statically, transitively), else the base's (``audit``). ``result_cache``:
    reuse the results of earlier runs whose inputs are unchanged and the base's audit made
    once per base, and store this run's (``resultcache``, ``audits``; materialised commits
    only, never the work tree). ``audit_red``: audit also when the lane is red (``False``:
    the gate, whose verdict a red lane has decided already; the audit only informs, so it
    does not run and the report says ``stopped``).
    """

    seed: int
    cases: int
    mutants: int = DEFAULT_MUTANTS
    only: str | None = None
    case: int | None = None
    changed: frozenset[str] | None = None
    result_cache: bool = True
    audit_red: bool = True


def run_property_lane(
    repo: Path,
    review_map: ReviewMap,
    request: PropertyRequest,
    *,
    base: str | None,
    head: str | None = "HEAD",
    out: Output | None = None,
    isolation: Isolation | None = None,
) -> PropertyReport:
    """Run the property lane's properties as ``request`` asks (its seed, cases, mutants,
    ``only``/``case``, changed paths and result cache: ``PropertyRequest``), then its
    oracle audit, and return the whole report.

    ``base``/``head`` are revisions: with ``base``, the base's property modules and the
    head's are both run against the head commit's code; with ``base=None`` and a ``head``
    only that commit is run; with both ``None`` the work tree (no base, oracles from the
    work tree). ``isolation`` overrides the probed layers (tests). Raises ``MapError`` when the map has
    no property lane or names a module that exists neither at base nor at head,
    ``InputError`` when the base holds a property module only as an entry that cannot be
    materialised (a symlink out of the repository), ``EnvironmentFault`` when a module
    cannot import a third-party package at base and head alike (docs/architecture.md §2: exit 2, not
    the patch's fault), ``UsageError`` for bad options or an ``only`` that names no
    property, ``GitError`` for an unknown revision, ``CacheKeyError`` when the cache key
    cannot be read or made.
    """
    lane = review_map.property
    if lane is None:
        raise MapError(review_map.label, "no property lane (lanes.property): nothing to run")
    _check_options(request.seed, request.cases, request.mutants, request.only, request.case)
    out = out or Output(quiet=True)
    layers = isolation or sandbox_isolation()
    started = time.monotonic()
    # The code under test may leave files it made unremovable: never an error of ours.
    with tempfile.TemporaryDirectory(
        prefix="patchlane-property-", ignore_cleanup_errors=True
    ) as tmp:
        scratch = Path(tmp).resolve()
        trees = materialise_trees(repo, review_map, base, head, scratch)
        cache = _result_cache(trees) if request.result_cache else None
        seed, cases, case = request.seed, request.cases, request.case
        ctx = Context(lane, review_map.label, trees, scratch, seed, cases, case, layers, out, cache)
        found = _properties(ctx, request.only)
        audited = _audit(found, request)
        return _lane_report(found, audited, started)


@dataclass(frozen=True)
class _Properties:
    """The lane's properties run and judged (all a verdict reads): what each step before
    the audit returned, and what they all read."""

    ctx: Context
    planned: Plan
    ran: Ran
    outcomes: Outcomes
    checked: Checked


def _properties(ctx: Context, only: str | None) -> _Properties:
    """Plan, run and judge the lane's properties, then check whose fault an import that
    failed is. Raises what ``plan`` and ``faults.check`` raise."""
    planned = plan(ctx, only)
    ran = run(ctx, planned.jobs)
    outcomes = judge_runs(ran.finished, ctx.seed)
    # The plan made one home per job, numbered from 1: the checks' children come next.
    checked = check(ctx, outcomes, first_home=len(planned.jobs) + 1)
    return _Properties(ctx, planned, ran, outcomes, checked)


def _lane_report(found: _Properties, audited: Audited, started: float) -> PropertyReport:
    """The lane's report from the steps' results (``audited``: the audit's, or what the
    report says of it when it does not run; ``started``: ``time.monotonic()`` when the
    lane began)."""
    ctx, planned = found.ctx, found.planned
    runs, failures = _ordered(found)
    status, reason = status_and_reason(failures, runs, ctx.seed, ctx.cases, ctx.trees.where)
    return PropertyReport(
        status=status,
        reason=reason,
        seed=ctx.seed,
        cases=ctx.cases,
        modules=ctx.lane.modules,
        base=ctx.trees.base,
        head=ctx.trees.head,
        properties=runs,
        failures=failures,
        oracle_findings=audited.findings,
        mutation=audited.mutations,
        oracle_audit=audited.said,
        isolation=IsolationInfo(network_layers(ctx.layers), ctx.lane.timeout_s),
        seconds=time.monotonic() - started,
        children=(*found.ran.timings, *found.checked.timings, *audited.timings),
        cache=found.ran.cache_use,
        skipped_tests=planned.tests.skipped if planned.tests is not None else (),
    )


def _ordered(found: _Properties) -> tuple[tuple[PropertyRun, ...], tuple[Failure, ...]]:
    """Return the runs and failures in report order: modules as the map lists them,
    properties in source order (base first, then head-only ones), base before head; the
    plan's failures before the runs' where the order does not tell them apart."""
    planned = found.planned
    files = planned.tests.files if planned.tests is not None else ()
    modules = {m: i for i, m in enumerate((*found.ctx.lane.modules, *files))}

    def key(module: str, name: str, source: str) -> tuple[int, int, int]:
        names = planned.order.get(module, ())
        index = -1 if name == MODULE_LEVEL else (names.index(name) if name in names else len(names))
        return modules.get(module, len(modules)), index, SOURCES.index(source)

    runs = sorted(found.outcomes.runs, key=lambda r: key(r.module, r.property, r.source))
    failures = sorted(
        (*planned.failures, *found.outcomes.failures),
        key=lambda f: key(f.module, f.property, f.source),
    )
    return tuple(runs), tuple(failures)


def _audit(found: _Properties, request: PropertyRequest) -> Audited:
    """Run the oracle audit step when it applies and return what the report says of it:
    ``not run`` for a rerun (``only``) or when no head property passed (tests the map names
    are not audited), ``stopped`` for a red lane the caller does not want audited
    (``request.audit_red``), ``not available`` without the audit's module."""
    ctx = found.ctx
    passed_at_head = any(module in ctx.lane.modules for module, _name in found.outcomes.passed)
    if request.only is not None or not passed_at_head:
        return Audited("not run")
    if not request.audit_red and _red(found):
        return Audited(STOPPED)
    if importlib.util.find_spec(ORACLE_MODULE) is None:
        return Audited("not available")
    return audit(
        ctx,
        found.planned,
        found.outcomes,
        changed=request.changed,
        mutants=request.mutants,
        first_home=found.checked.next_home,
        cache=_audit_cache() if ctx.cache is not None else None,
    )


def _red(found: _Properties) -> bool:
    """Whether the lane's report will be red (a property failed, or a module could not be
    evaluated)."""
    runs, failures = _ordered(found)
    ctx = found.ctx
    status, _ = status_and_reason(failures, runs, ctx.seed, ctx.cases, ctx.trees.where)
    return status.red


def _audit_cache() -> audits.AuditCache:
    """Return the base audit cache (in patchlane's cache directory, sealed with the user's
    key). Raises ``CacheKeyError`` when the key cannot be read or made."""
    cache = default_cache()
    return audits.AuditCache(cache / audits.FOLDER, load_or_create_key(cache))


def _result_cache(trees: Trees) -> resultcache.ResultCache | None:
    """Return the result cache for this lane run's trees, or ``None`` for the work tree (it
    can change while a child reads it, so what was hashed may not be what was read).
    Raises ``CacheKeyError`` when the cache key cannot be read or made."""
    if trees.head is None:
        return None
    roots = {"head": trees.head_root}
    if trees.base_root is not None:
        roots["base"] = trees.base_root
    try:
        prefix = process_pycache()
    except OSError:
        return None
    key = load_or_create_key(default_cache())
    return resultcache.ResultCache(default_cache() / resultcache.FOLDER, roots, (prefix,), key)


def _check_options(seed: int, cases: int, mutants: int, only: str | None, case: int | None) -> None:
    for label, value, minimum in (("seed", seed, 0), ("cases", cases, 1), ("mutants", mutants, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise UsageError(f"--{label} {value!r}: must be an integer of at least {minimum}")
    if case is not None:
        if only is None:
            raise UsageError("--case needs --only NAME (a case index belongs to one property)")
        if isinstance(case, bool) or not isinstance(case, int) or case < 0:
            raise UsageError(f"--case {case!r}: must be an integer of at least 0")
