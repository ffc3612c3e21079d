"""The freeze lane: read the base's registry and its history, audit every record, report.

DESIGN.md §2: the registry that decides is the base's; a freeze the patch adds or changes
is listed for a person and cannot skip anything in the same patch.
"""

from __future__ import annotations

import time
from datetime import date
from pathlib import Path
from typing import Any

from patchlane import git
from patchlane.config import ReviewMap
from patchlane.lanes.freeze.audit import LockEvidence, PropertyEvidence, judge_record
from patchlane.lanes.freeze.history import History, registry_history
from patchlane.lanes.freeze.report import FreezeReport, RecordResult
from patchlane.lanes.freeze.source import NONE, Registry, load_base_registry


def _ids(ids: tuple[str, ...]) -> str:
    return ", ".join(ids)


def status_and_reason(registry: Registry, results: tuple[RecordResult, ...]) -> tuple[str, str]:
    """Return the lane's ``status`` and one-line ``reason`` for these results."""
    if registry.source == NONE and not registry.head_records and registry.head_problem is None:
        return "not_applicable", f"no freeze registry at base ({registry.path}): nothing is frozen"
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
        return "fail", "; ".join(problems)
    if registry.source == NONE:
        return "pass", (
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
    return "pass", reason


def audit(
    repo: Path,
    review_map: ReviewMap,
    *,
    base: str,
    head: str,
    merge_base: str,
    changed_paths: frozenset[str],
    today: date,
    property_report: dict[str, Any] | None,
    fixture_report: dict[str, Any] | None,
    failure_log: frozenset[str],
    registry: Registry | None = None,
) -> FreezeReport:
    """Audit the base's freeze registry for the patch ``merge_base..head``.

    ``registry`` is the one ``load_base_registry`` returned for these commits, when the
    caller already read it (the gate does, to know whether a freeze is in play).

    ``changed_paths`` holds every path the patch touches (both sides of renames);
    ``property_report`` and ``fixture_report`` are the other lanes' reports as JSON data
    (``None``: missing, so rules 3 and 4 cannot hold for a record that needs them);
    ``failure_log`` holds the failed node ids of the last run. Returns a ``FreezeReport``.
    Raises ``RegistryError`` when the base's registry is a symlink or malformed, and
    ``GitError`` when git cannot answer (including a shallow clone that cuts the
    registry's history).
    """
    started = time.perf_counter()
    base_commit = git.resolve_commit(repo, base)
    head_commit = git.resolve_commit(repo, head)
    lane = review_map.freeze
    if lane is None:
        return FreezeReport(
            status="not_applicable",
            reason="the map has no freeze lane",
            today=today,
            registry=None,
            registry_source=NONE,
            max_age_days=None,
            max_extensions=None,
            base=base_commit,
            head=head_commit,
            merge_base=merge_base,
            records=(),
            added_by_patch=(),
            changed_by_patch=(),
            removed_by_patch=(),
            head_registry_problem=None,
            history_versions=0,
            notes=(),
            seconds=time.perf_counter() - started,
        )
    if registry is None:
        registry = load_base_registry(repo, review_map, base_commit, head_commit)
    # The history is read only when there is something to judge: it costs a git call per
    # commit that touched the registry.
    history = (
        registry_history(repo, base_commit, lane.registry)
        if registry.records
        else History(0, (), ())
    )
    props = PropertyEvidence.of(property_report)
    locks = LockEvidence.of(fixture_report)
    results = tuple(
        judge_record(
            r,
            lane,
            today=today,
            props=props,
            locks=locks,
            changed_paths=changed_paths,
            failure_log=failure_log,
            history=history,
        )
        for r in registry.records
    )
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
        base=base_commit,
        head=head_commit,
        merge_base=merge_base,
        records=results,
        added_by_patch=registry.added_by_patch,
        changed_by_patch=registry.changed_by_patch,
        removed_by_patch=registry.removed_by_patch,
        head_registry_problem=registry.head_problem,
        history_versions=history.versions,
        notes=tuple(notes),
        seconds=time.perf_counter() - started,
    )
