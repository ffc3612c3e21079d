"""The replay lane's reports that say why there is no evidence, and the facts every report
gains on its way (the slice's, the review events).

Each is a plain function of a ``ReplayReport``: the pipelines (``local``, ``hosted``) and
the checks at the base (``checks``) build their result from these.
"""

from __future__ import annotations

import dataclasses

from patchlane.formats.replay_report import (
    SKIPPED,
    PrivateFile,
    ReplayOutcome,
    ReplayReport,
)
from patchlane.formats.status import Status
from patchlane.infra.ui import one_line
from patchlane.lanes.replay.selection import Selection


def no_evidence(mode: str, outcome: ReplayOutcome, reason: str) -> ReplayReport:
    """A report of a replay that gave no evidence (``error``: the verdict stays undecided)."""
    return ReplayReport(Status.ERROR, reason, outcome=outcome, mode=mode)


def skipped(mode: str) -> ReplayReport:
    """The report of a replay never started because an earlier lane is red: no evidence
    (``error``) whose outcome, ``skipped``, lets a reject's summary leave it out."""
    reason = "replay skipped: an earlier lane is red (it runs only when every local lane is green)"
    return no_evidence(mode, SKIPPED, reason)


def harness_broke_collection(mode: str, e: Exception) -> ReplayReport:
    """The patch changed what pytest loads, and pytest no longer starts: that is the
    patch's doing and a person's to look at, not a fault of this machine (no exit 2)."""
    return no_evidence(
        mode,
        ReplayOutcome.NOT_RUN,
        f"replay not run: pytest cannot collect the suite after the patch's harness "
        f"change ({one_line(str(e))[:300]})",
    )


def empty(mode: str) -> ReplayReport:
    """The report of an empty slice: no evidence."""
    reason = "empty slice: no test reaches the change, and an empty set is never evidence"
    return no_evidence(mode, ReplayOutcome.EMPTY, reason)


def with_slice(report: ReplayReport, selection: Selection) -> ReplayReport:
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


def with_events(report: ReplayReport, *events: str) -> ReplayReport:
    """Return ``report`` with ``events`` added to its review events (the report lists them
    from now on, even when there are none yet)."""
    return dataclasses.replace(report, review_events=(*(report.review_events or ()), *events))


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
