"""The audit step: the oracle audit of the head's properties that passed, one child per
module (``child.oracle_audit``), run synchronously after the properties. It only informs:
it says how good an oracle is, never whether the patch broke it.

Which audit a patch gets follows from what it changes (``PropertyRequest.changed``):

- a patch that changes a property module, or a file one of them imports (statically,
  transitively: ``reached``), gets its own audit, ``ran``;
- any other patch gets the base's audit, ``unchanged``: its oracles and the code they
  reach are the base's, so their audit is too. It is made once per base, by the first such
  patch, and kept in the base audit cache (``cache.audits``), so that a base property that
  checks nothing is flagged on every patch against that base, a comment-only one too;
- without a patch (the work tree, one commit) the audit runs, ``ran``.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from patchlane.child.messages import Job
from patchlane.formats.property_report import ChildTiming, Mutation, OracleFinding
from patchlane.infra import git
from patchlane.lanes.property import discover, judge
from patchlane.lanes.property.cache import audits
from patchlane.lanes.property.cache.sealed import canonical
from patchlane.lanes.property.jobs import ChildJob, Context, Finished, execute, home, run_payload
from patchlane.lanes.property.outcomes import Outcomes
from patchlane.lanes.property.plan import Plan
from patchlane.lanes.property.trees import places
from patchlane.project import importgraph

ORACLE_MODULE = "patchlane.child.oracle_audit.audit"
# What the report says of an audit: the patch's own, or the base's (see the docstring).
RAN = "ran"
UNCHANGED = "unchanged"


@dataclass(frozen=True)
class Audited:
    """The audit step's result: what the report says of the audit (``said``: ``ran`` or
    ``unchanged``), its findings and kill ratios in job order, and its children's timings
    (one cached entry per module when the base's audit came from the cache)."""

    said: str
    findings: tuple[OracleFinding, ...] = ()
    mutations: tuple[Mutation, ...] = ()
    timings: tuple[ChildTiming, ...] = ()


def audit(
    ctx: Context,
    planned: Plan,
    outcomes: Outcomes,
    *,
    changed: frozenset[str] | None,
    mutants: int,
    first_home: int,
    cache: audits.AuditCache | None,
) -> Audited:
    """Audit every head property that passed (``outcomes.passed``) and return what the
    report says of it: the patch's own audit when ``changed`` (a patch's changed paths) is
    ``None`` or reaches a head property module (``reached``), else the base's, from
    ``cache`` when it holds it (then no child starts), else made now and stored there
    (``cache`` ``None``: made now, not stored). The children's homes are numbered from
    ``first_home``. Raises nothing for what a child does; ``GitError`` when the base's
    tree cannot be read."""
    if changed is None:
        return _run(ctx, _jobs(ctx, planned, outcomes, mutants, first_home), mutants)[0]
    sources = reached(ctx, planned)
    if not sources.keys().isdisjoint(changed):
        return _run(ctx, _jobs(ctx, planned, outcomes, mutants, first_home), mutants)[0]
    return _base_audit(ctx, planned, outcomes, mutants, first_home, sources, cache)


def _base_audit(
    ctx: Context,
    planned: Plan,
    outcomes: Outcomes,
    mutants: int,
    first_home: int,
    sources: Mapping[str, bytes],
    cache: audits.AuditCache | None,
) -> Audited:
    """The base's audit (``audit``): the cached one, or one made now on the head's trees
    (the same oracles and code as the base's) and stored when every child's result could
    be trusted."""
    described = None
    if cache is not None and ctx.trees.base is not None:
        tree = git.out(ctx.trees.repo, "rev-parse", f"{ctx.trees.base}^{{tree}}")
        described = audits.describe(
            tree.decode("ascii").strip(),
            _digest(sources),
            [(module, names) for module, _version, names in _audited(ctx, planned, outcomes)],
            mutants=mutants,
            seed=ctx.seed,
            cases=ctx.cases,
            lane=ctx.lane,
            isolation=(ctx.layers.kind, *ctx.layers.netns_prefix),
        )
        start = time.monotonic()
        stored = cache.lookup(described)
        for entry in cache.unverified:
            ctx.out.progress(f"oracle audit: cache entry {entry} did not verify: not used")
        if stored is not None:
            took = time.monotonic() - start
            timings = tuple(ChildTiming(m, "head", "audit", took, True) for m in stored.modules)
            ctx.out.progress("oracle audit: the base's, from the cache")
            return Audited(UNCHANGED, stored.findings, stored.mutations, timings)
    jobs = _jobs(ctx, planned, outcomes, mutants, first_home)
    made, trusted = _run(ctx, jobs, mutants)
    if described is not None and cache is not None and trusted:
        kept = audits.BaseAudit(tuple(j.module for j in jobs), made.findings, made.mutations)
        why = cache.store(described, kept)
        if why:
            ctx.out.debug(f"oracle audit cache: not stored: {why}")
    return replace(made, said=UNCHANGED)


def reached(ctx: Context, planned: Plan) -> dict[str, bytes]:
    """Return the files of the head tree (repository paths, with their bytes) that the
    head's property modules are or import, directly or not (the static import graph; a
    computed import reaches every module). A patch that changes none of them leaves the
    audit as the base's."""
    head = ctx.trees.head_root
    roots = [
        r.relative_to(head).as_posix() if r != head else ""
        for r in discover.search_roots(head, ctx.lane)
    ]
    sources = {
        p.relative_to(head).as_posix(): p.read_bytes()
        for p in head.rglob("*.py")
        if p.is_file() and not p.is_symlink()
    }
    graph = importgraph.build(sources, roots)
    found: set[str] = set()
    for version in planned.head_versions.values():
        found |= graph.files_reached(version.file.relative_to(head).as_posix())
    return {path: sources[path] for path in sorted(found) if path in sources}


def _digest(sources: Mapping[str, bytes]) -> str:
    """Return the SHA-256 of ``sources`` (paths and the digests of their bytes)."""
    rows = [[path, hashlib.sha256(data).hexdigest()] for path, data in sorted(sources.items())]
    return hashlib.sha256(canonical(rows)).hexdigest()


def _run(ctx: Context, jobs: Sequence[ChildJob], mutants: int) -> tuple[Audited, bool]:
    """Run the audit ``jobs``; return what they found (``ran``) and whether every child's
    result could be trusted (a complete, well-formed record for each property)."""
    finished = execute(ctx, jobs)
    findings: list[OracleFinding] = []
    mutations: list[Mutation] = []
    trusted = True
    for one in finished:
        found, measured, whole = _judge_audit(one, mutants)
        findings.extend(found)
        mutations.extend(measured)
        trusted = trusted and whole
    timings = tuple(f.timing for f in finished)
    return Audited(RAN, tuple(findings), tuple(mutations), timings), trusted


def _audited(
    ctx: Context, planned: Plan, outcomes: Outcomes
) -> list[tuple[str, discover.ModuleVersion, tuple[str, ...]]]:
    """Each property module with a head property that passed, in map order (tests the map
    names are not audited): its head version and the properties that passed, in report
    order."""
    found = []
    for module in ctx.lane.modules:
        version = planned.head_versions.get(module)
        names = tuple(n for n in planned.order[module] if (module, n) in outcomes.passed)
        if version is not None and names:
            found.append((module, version, names))
    return found


def _jobs(
    ctx: Context, planned: Plan, outcomes: Outcomes, mutants: int, first_home: int
) -> list[ChildJob]:
    """One audit job per module with a head property that passed (``_audited``), in map
    order, its home numbered from ``first_home``."""
    # The head's property packages where they really are: a candidate built from a
    # module's name that does not exist would, as a bare prefix, also hide code under
    # test (``src/checks`` covers ``src/checksum.py``), and one that holds other code
    # is not a property package.
    lane, head = ctx.lane, ctx.trees.head_root
    excluded = list(
        dict.fromkeys(
            os.fspath(head.joinpath(*rel.rstrip("/").split("/")))
            for module in lane.modules
            for rel in places(head, lane, module)
        )
    )
    if ctx.trees.base_root is not None:
        excluded.append(os.fspath(ctx.trees.base_root))
    homes = itertools.count(first_home)
    jobs = []
    for module, version, names in _audited(ctx, planned, outcomes):
        # A mutant that loops must not eat the whole budget: each gets ten times what
        # the property took (at least a second); the child's clock allows them all.
        budgets = {n: max(1.0, 10 * outcomes.passed[(module, n)]) for n in names}
        # The child stops starting mutants at the budget; one already running may take
        # its own timeout, and the clock allows for that and for the import.
        longest = max(budgets.values())
        timeout = lane.timeout_s + lane.audit_budget_s + 2 * longest
        made = home(ctx, next(homes))
        payload: Job = {
            **run_payload(ctx, version, names),
            "mode": "audit",
            "case": None,
            "home": os.fspath(made),
            "project_root": os.fspath(head),
            "exclude": excluded,
            "mutants": mutants,
            "per_mutant_timeout_s": budgets,
            "budget_s": lane.audit_budget_s,
        }
        jobs.append(ChildJob(module, "head", "audit", names, payload, timeout, made))
    return jobs


def _judge_audit(one: Finished, mutants: int) -> tuple[list[OracleFinding], list[Mutation], bool]:
    """Return the findings and kill ratios one audit child's records give (a property
    without a trusted record gets a ratio of nothing, saying why), and whether the child
    gave a trusted record for every property."""
    job, result = one.job, one.result
    findings: list[OracleFinding] = []
    mutations: list[Mutation] = []
    got, problems = judge.records(job.names, result, judge.valid_audit_record)
    whole = not problems and not result.timed_out and set(got) == set(job.names)
    for name in job.names:
        record = got.get(name)
        if record is None or problems:
            why = (
                "timed out"
                if result.timed_out and record is None
                else "; ".join(problems[:3]) or "no result"
            )
            mutations.append(Mutation(job.module, name, 0, 0, f"no audit result: {why}"))
            continue
        said = record["audit"]
        if "error" in said:
            mutations.append(Mutation(job.module, name, 0, 0, said["error"]))
            continue
        for kind, detail in said["findings"]:
            findings.append(
                OracleFinding(module=job.module, property=name, kind=kind, detail=detail)
            )
        if mutants > 0:
            mutations.append(Mutation(job.module, name, said["mutants"], said["killed"]))
    return findings, mutations, whole
