"""The audit step: the oracle audit of the head's properties that passed, one child per
module (``child.oracle_audit``), run in a thread of its own while the caller goes on. It
only informs: it says how good an oracle is, never whether the patch broke it.
"""

from __future__ import annotations

import itertools
import os
import threading
from dataclasses import dataclass

from patchlane.child.messages import Job
from patchlane.formats.property_report import ChildTiming, Mutation, OracleFinding
from patchlane.lanes.property import discover, judge
from patchlane.lanes.property.jobs import ChildJob, Context, Finished, execute, home, run_payload
from patchlane.lanes.property.outcomes import Outcomes
from patchlane.lanes.property.plan import Plan
from patchlane.lanes.property.trees import places

ORACLE_MODULE = "patchlane.child.oracle_audit.audit"


@dataclass(frozen=True)
class Audited:
    """The audit step's result: what the report says of the audit (``said``: ``ran`` or
    ``unchanged``), its findings and kill ratios in job order, and its children's timings."""

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
    stop: threading.Event,
) -> Audited:
    """Audit every head property that passed (``outcomes.passed``), unless ``changed`` (a
    patch's changed paths) reaches no head property module (``reaches``): an audit of
    unchanged oracles and code would repeat the base's. The children's homes are numbered
    from ``first_home``; once ``stop`` is set, running children are killed and the rest
    never start. Raises nothing for what a child does."""
    # Whether the patch reaches a property takes parsing the head's sources: done here,
    # off the caller's path, like the audit itself.
    if changed is not None and not reaches(ctx, planned, changed):
        return Audited("unchanged")  # no property module, nothing they import: the base's
    jobs = _audit_jobs(ctx, planned, outcomes, mutants, first_home)
    finished = execute(ctx, jobs, stop=stop)
    findings: list[OracleFinding] = []
    mutations: list[Mutation] = []
    for one in finished:
        found, measured = _judge_audit(one, mutants)
        findings.extend(found)
        mutations.extend(measured)
    timings = tuple(f.timing for f in finished)
    return Audited("ran", tuple(findings), tuple(mutations), timings)


def reaches(ctx: Context, planned: Plan, changed: frozenset[str]) -> bool:
    """Whether a changed path is one of the head's property modules or a file of the
    head tree that one of them imports, directly or not (the static import graph; a
    computed import reaches every module)."""
    from patchlane.project import importgraph

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
    for version in planned.head_versions.values():
        start = version.file.relative_to(head).as_posix()
        if graph.files_reached(start) & changed:
            return True
    return False


def _audit_jobs(
    ctx: Context, planned: Plan, outcomes: Outcomes, mutants: int, first_home: int
) -> list[ChildJob]:
    """One audit job per module with a head property that passed, in map order."""
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
    for module in lane.modules:
        version = planned.head_versions.get(module)
        names = tuple(n for n in planned.order[module] if (module, n) in outcomes.passed)
        if version is None or not names:
            continue
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


def _judge_audit(one: Finished, mutants: int) -> tuple[list[OracleFinding], list[Mutation]]:
    """Return the findings and kill ratios one audit child's records give (a property
    without a trusted record gets a ratio of nothing, saying why)."""
    job, result = one.job, one.result
    findings: list[OracleFinding] = []
    mutations: list[Mutation] = []
    got, problems = judge.records(job.names, result, judge.valid_audit_record)
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
    return findings, mutations
