"""The freeze lane: read the base's registry and its history, audit every record, report.

The registry that decides is the base's (docs/architecture.md §2); a freeze the patch adds or changes
is listed for a person and cannot skip anything in the same patch.
"""

from __future__ import annotations

import time
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from patchlane.formats.freeze_report import NONE, FreezeReport, RecordResult
from patchlane.formats.status import Status
from patchlane.lanes.freeze.audit import LockEvidence, PropertyEvidence, judge_record
from patchlane.lanes.freeze.history import History, registry_history
from patchlane.lanes.freeze.source import Registry, load_base_registry

if TYPE_CHECKING:
    from patchlane.formats.fixture_report import FixtureReport
    from patchlane.formats.property_report import PropertyReport
    from patchlane.project.config import FreezeLane
    from patchlane.project.patch import Patch


def _ids(ids: tuple[str, ...]) -> str:
    return ", ".join(ids)


def status_and_reason(registry: Registry, results: tuple[RecordResult, ...]) -> tuple[Status, str]:
    """Return the lane's ``status`` and one-line ``reason`` for these results."""
    if registry.source == NONE and not registry.head_records and registry.head_problem is None:
        return (
            Status.NOT_APPLICABLE,
            f"no freeze registry at base ({registry.path}): nothing is frozen",
        )
    red = [r for r in results if r.red]
    problems = []
    if registry.head_problem is not None:
        problems.append(f"the patch's freeze registry cannot be read: {registry.head_problem}")
    if red:
        listed = "; ".join(
            f"{r.id} (rule {', '.join(str(n) for n in r.failed_rules)})" for r in red
        )
        problems.append(f"{len(red)} in-play freeze record(s) fail the audit: {listed}")
    if problems:
        return Status.FAIL, "; ".join(problems)
    if registry.source == NONE:
        return Status.PASS, (
            f"no freeze registry at base; the patch adds {_ids(registry.added_by_patch)}, "
            "inert until merged: a freeze cannot skip anything in the patch that adds it"
        )
    in_play = [r for r in results if r.in_play]
    reason = (
        f"{len(results)} freeze record(s) audited: {len(in_play)} in play and passing, "
        f"{len(results) - len(in_play)} not in play"
    )
    inert = registry.added_by_patch + registry.changed_by_patch
    if inert:
        reason += f"; added or changed by the patch (inert, the base decides): {_ids(inert)}"
    return Status.PASS, reason


def _judge(
    registry: Registry,
    lane: FreezeLane,
    patch: Patch,
    today: date,
    evidence: tuple[PropertyEvidence, LockEvidence],
    failure_log: frozenset[str],
    history: History,
) -> tuple[RecordResult, ...]:
    """Apply rules 1-6 to every record of the base's registry, in order."""
    props, locks = evidence
    return tuple(
        judge_record(
            r,
            lane,
            today=today,
            props=props,
            locks=locks,
            changed_paths=patch.changed_paths,
            failure_log=failure_log,
            history=history,
        )
        for r in registry.records
    )


def audit(
    repo: Path,
    patch: Patch,
    *,
    today: date,
    property_report: PropertyReport | None,
    fixture_report: FixtureReport | None,
    failure_log: frozenset[str],
    registry: Registry | None = None,
) -> FreezeReport:
    """Audit the base's freeze registry for ``patch`` (under its deciding map).

    ``registry`` is the one ``load_base_registry`` returned for these commits, when the
    caller already read it (the gate does, to know whether a freeze is in play).
    ``property_report`` and ``fixture_report`` are the other lanes' reports (``None``:
    missing, so rules 3 and 4 cannot hold for a record that needs them); ``failure_log``
    holds the failed node ids of the last run. Returns a ``FreezeReport``. Raises
    ``RegistryError`` when the base's registry is a symlink or malformed, and ``GitError``
    when git cannot answer (including a shallow clone that cuts the registry's history).
    """
    started = time.perf_counter()
    lane = patch.review_map.freeze
    if lane is None:
        return FreezeReport(
            Status.NOT_APPLICABLE,
            "the map has no freeze lane",
            today=today,
            base=patch.base,
            head=patch.head,
            merge_base=patch.merge_base,
            seconds=time.perf_counter() - started,
        )
    if registry is None:
        registry = load_base_registry(repo, patch.review_map, patch.base, patch.head)
    # The history is read only when there is something to judge: it costs a git call per
    # commit that touched the registry.
    history = (
        registry_history(repo, patch.base, lane.registry)
        if registry.records
        else History(0, (), ())
    )
    evidence = (PropertyEvidence.of(property_report), LockEvidence.of(fixture_report))
    results = _judge(registry, lane, patch, today, evidence, failure_log, history)
    status, reason = status_and_reason(registry, results)
    notes = list(history.notes)
    if registry.source == NONE:
        notes.append(f"no freeze registry at base: {lane.registry} does not exist there")
    return FreezeReport(
        status=status,
        reason=reason,
        today=today,
        registry=lane.registry,
        registry_source=registry.source,
        max_age_days=lane.max_age_days,
        max_extensions=lane.max_extensions,
        base=patch.base,
        head=patch.head,
        merge_base=patch.merge_base,
        records=results,
        added_by_patch=registry.added_by_patch,
        changed_by_patch=registry.changed_by_patch,
        removed_by_patch=registry.removed_by_patch,
        head_registry_problem=registry.head_problem,
        history_versions=history.versions,
        notes=tuple(notes),
        seconds=time.perf_counter() - started,
    )
