"""The verdict: lane reports read in one fixed order (docs/architecture.md §1).

A later green lane never erases an earlier red one, lanes are never averaged, and missing
evidence is ``undecided``, never a pass. The verdict's file, ``verdict.json``, is
``formats.verdict_file``'s.
"""

from __future__ import annotations

from typing import Protocol

from patchlane.formats.facts import PatchFacts
from patchlane.formats.replay_report import ReplayReport
from patchlane.formats.status import Status
from patchlane.formats.verdict_file import (
    ACCEPT,
    REJECT,
    UNDECIDED,
    IsolationFacts,
    Reason,
    Verdict,
)
from patchlane.infra.ui import one_line


class LaneEvidence(Protocol):
    """What the verdict reads from one lane report (every lane's report type has it).

    ``review_events`` are evidence a person must weigh (tests the patch deletes,
    expectations it edits, a fixture whose checkout bytes an attribute rewrites): each keeps
    the verdict at ``undecided`` (rule 6) whatever the lane's status. ``None`` (a replay
    report without the key) means none.
    """

    @property
    def lane(self) -> str: ...

    @property
    def status(self) -> Status: ...

    @property
    def reason(self) -> str: ...

    @property
    def review_events(self) -> tuple[str, ...] | None: ...


def decide(
    prop: LaneEvidence | None,
    fixture: LaneEvidence | None,
    freeze: LaneEvidence | None,
    replay: LaneEvidence | None,
    facts: PatchFacts | None,
    isolation: IsolationFacts | None = None,
) -> Verdict:
    """Apply the reading order of docs/architecture.md §1 to the lanes' reports.

    ``None`` means the evidence is missing. ``isolation``: which isolation the children
    had; when the map requires the kernel sandbox and it did not run, that is rule 6.
    Returns the ``Verdict`` with every reason that fired, in rule order; the verdict is the
    strongest (reject, then undecided).
    """
    reasons = [*_lane_reasons(prop, fixture, freeze, replay), *_facts_reasons(facts)]
    reasons += _evidence_reasons(prop, fixture, freeze, replay)
    reasons += _head_map_reasons(facts)
    reasons += _vacuity_reasons(replay)
    if facts is not None and facts.harness_changed:
        names = ", ".join(facts.harness_changed)
        reasons.append(
            Reason(
                6,
                "classify",
                UNDECIDED,
                f"the patch changes the test harness or what runs in its place ({names}): "
                "its own replay cannot earn accept_for_review until a person has looked",
            )
        )
    if isolation is not None and isolation.required and isolation.kind != "bwrap":
        reasons.append(
            Reason(
                6,
                "isolation",
                UNDECIDED,
                f"the map sets isolation: required, but the patch's code ran with "
                f"{isolation.detail}",
            )
        )
    reasons.sort(key=lambda r: r.rule)
    if any(r.effect == REJECT for r in reasons):
        return Verdict(REJECT, tuple(reasons), isolation)
    if reasons:
        return Verdict(UNDECIDED, tuple(reasons), isolation)
    accept = Reason(7, "verdict", ACCEPT, "every lane is green; a person still reviews")
    return Verdict(ACCEPT, (accept,), isolation)


def _lane_reasons(
    prop: LaneEvidence | None,
    fixture: LaneEvidence | None,
    freeze: LaneEvidence | None,
    replay: LaneEvidence | None,
) -> list[Reason]:
    """Rules 1 to 4: a red local lane, a failure on the slice."""
    reasons: list[Reason] = []
    for rule, lane, result in (
        (1, "property", prop),
        (2, "fixture", fixture),
        (3, "freeze", freeze),
    ):
        # An error (a property that raised, a lock that cannot be read safely) is red:
        # only evidence counts, never its absence.
        if result is not None and result.status.red:
            reasons.append(Reason(rule, lane, REJECT, f"{lane} red: {result.reason}"))
    if replay is not None and replay.status == Status.FAIL:
        reasons.append(
            Reason(
                4,
                "replay",
                REJECT,
                f"a non-frozen node failed on the replay slice: {replay.reason}",
            )
        )
    return reasons


def _facts_reasons(facts: PatchFacts | None) -> list[Reason]:
    """Rule 5: no classification, or a map that does not cover the diff."""
    if facts is None:
        why = "no classification: map coverage and harness changes are unknown"
        return [Reason(5, "classify", UNDECIDED, why)]
    if not facts.map_complete:
        return [Reason(5, "classify", UNDECIDED, f"map incomplete: {facts.map_reason}")]
    return []


def _evidence_reasons(
    prop: LaneEvidence | None,
    fixture: LaneEvidence | None,
    freeze: LaneEvidence | None,
    replay: LaneEvidence | None,
) -> list[Reason]:
    """Rule 6 from the reports: a missing one, a replay without evidence, review events."""
    reasons = [
        Reason(6, lane, UNDECIDED, f"no {lane} report: the lane's evidence is missing")
        for lane, result in (("property", prop), ("fixture", fixture), ("freeze", freeze))
        if result is None
    ]
    if replay is None:
        reasons.append(Reason(6, "replay", UNDECIDED, "replay not run: no replay report"))
    elif replay.status not in (Status.PASS, Status.FAIL):
        reasons.append(Reason(6, "replay", UNDECIDED, f"replay gave no evidence: {replay.reason}"))
    # A lane's review event is evidence a person must weigh (a deleted test, a fixture
    # whose checkout bytes an attribute rewrites): never a pass.
    for result in (prop, fixture, freeze, replay):
        if result is not None:
            reasons.extend(
                Reason(6, result.lane, UNDECIDED, event) for event in result.review_events or ()
            )
    return reasons


def _vacuity_reasons(replay: LaneEvidence | None) -> list[Reason]:
    """Rule 6 from the replay's check of the tests that ran the changed code: tests that
    cannot fail, outcomes that change when they run again, values copied from the tests
    (docs/architecture.md §2, "A test that cannot fail is not evidence")."""
    if not isinstance(replay, ReplayReport):
        return []
    return [Reason(6, "vacuity", UNDECIDED, event) for event in replay.vacuity_events or ()]


def _head_map_reasons(facts: PatchFacts | None) -> list[Reason]:
    """Return the rule-6 reason for a review map of the patch's that does not load, if any.

    The base's map decided, so the patch's bad map is no input error; yet the base cannot
    read the map the patch would leave behind (docs/architecture.md §2)."""
    if facts is None or facts.head_map_problem is None:
        return []
    why = one_line(facts.head_map_problem)
    return [
        Reason(
            6,
            "classify",
            UNDECIDED,
            f"the patch's review map cannot be read: {why}; "
            "the base's map decided, and a person must look before it is merged",
        )
    ]
