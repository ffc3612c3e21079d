"""The verdict: lane reports read in one fixed order (docs/architecture.md §1).

A later green lane never erases an earlier red one, lanes are never averaged, and missing
evidence is ``undecided``, never a pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from patchlane.errors import Exit
from patchlane.formats.canary import Canary
from patchlane.formats.envelope import read_report, report_document, show
from patchlane.formats.status import Status
from patchlane.infra.ui import one_line
from patchlane.inputs.fields import Document, Fields
from patchlane.project.facts import PatchFacts


class Ruling(StrEnum):
    """The gate's three answers (docs/architecture.md §1). A member is its own JSON text."""

    ACCEPT = "accept_for_review"
    REJECT = "reject"
    UNDECIDED = "undecided"


ACCEPT, REJECT, UNDECIDED = Ruling.ACCEPT, Ruling.REJECT, Ruling.UNDECIDED

EXIT_FOR = {ACCEPT: Exit.GREEN, REJECT: Exit.RED, UNDECIDED: Exit.UNDECIDED}
STATUS_FOR = {ACCEPT: Status.PASS, REJECT: Status.FAIL, UNDECIDED: Status.ERROR}

ISOLATION_KINDS = ("bwrap", "netns", "none")


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


@dataclass(frozen=True)
class IsolationFacts:
    """Which isolation the patch's code ran under (``bwrap``, ``netns`` or ``none``: see
    ``patchlane.infra.sandbox``), in a line, and whether the base's map requires the sandbox."""

    kind: str
    detail: str
    required: bool = False

    def to_json(self) -> dict[str, object]:
        """Return the facts as JSON-ready data, keys in a fixed order."""
        return {"kind": self.kind, "detail": self.detail, "required": self.required}

    @classmethod
    def parse(cls, item: Fields) -> IsolationFacts:
        """Read ``isolation``. Raises ``ReportError``."""
        item.only(("kind", "detail", "required"))
        return cls(
            kind=item.choice("kind", ISOLATION_KINDS),
            detail=item.string("detail"),
            required=item.boolean("required"),
        )


@dataclass(frozen=True)
class Reason:
    """One rule that fired: its number, the lane it concerns, its effect (``reject``,
    ``undecided`` or ``accept_for_review``) and why, one line."""

    rule: int
    lane: str
    effect: Ruling
    message: str

    def to_json(self) -> dict[str, object]:
        """Return the reason as JSON-ready data, keys in a fixed order."""
        return {
            "rule": self.rule,
            "lane": self.lane,
            "effect": self.effect,
            "message": self.message,
        }

    @classmethod
    def parse(cls, item: Fields) -> Reason:
        """Read one entry of ``reasons``. Raises ``ReportError``."""
        item.only(("rule", "lane", "effect", "message"))
        return cls(
            rule=item.integer("rule", lo=1),
            lane=item.string("lane"),
            effect=Ruling(item.choice("effect", tuple(EXIT_FOR))),
            message=item.string("message"),
        )


@dataclass(frozen=True)
class Verdict:
    """The verdict (``accept_for_review``, ``reject`` or ``undecided``) and every reason
    that fired, in rule order."""

    verdict: Ruling
    reasons: tuple[Reason, ...]
    # Which isolation the children had; ``None`` where the verdict was read from reports.
    isolation: IsolationFacts | None = None
    # The tests the replay drew at random outside its selection (``canary``), when it ran:
    # the replay report's, shown beside the verdict; no part of the decision.
    canary: Canary | None = field(default=None, compare=False)
    # Seconds per step of the gate that wrote it, and ``total`` (the one field that is not
    # a function of the inputs); ``None`` when not timed.
    timings: Mapping[str, float] | None = field(default=None, compare=False)

    @property
    def exit_code(self) -> int:
        """The exit code of the verdict (docs/architecture.md §3): 0, 1 or 3."""
        return int(EXIT_FOR[self.verdict])

    def to_json(self) -> dict[str, object]:
        """Return ``verdict.json`` as JSON-ready data: ``status`` and ``reason`` (the first
        reason's message) follow from the verdict and its reasons."""
        first = self.reasons[0].message if self.reasons else ""
        data: dict[str, object] = {
            "lane": "verdict",
            "status": STATUS_FOR[self.verdict].value,
            "verdict": self.verdict,
            "reason": first,
            "reasons": [r.to_json() for r in self.reasons],
        }
        if self.isolation is not None:
            data["isolation"] = self.isolation.to_json()
        if self.canary is not None:
            data["canary"] = self.canary.to_json()
        if self.timings is not None:
            data["timings"] = dict(self.timings)
        return data

    @classmethod
    def from_json(cls, data: object, label: str) -> Verdict:
        """Return the verdict that the JSON value ``data`` holds.

        Raises ``ReportError`` naming ``label`` for a value that is not a verdict: a
        missing, unknown or mistyped key, an unknown verdict or effect, or a ``status`` or
        ``reason`` that disagrees with the verdict and its reasons.
        """
        return _parse_verdict(report_document(label), data)

    @classmethod
    def read(cls, path: Path, label: str | None = None) -> Verdict:
        """Read and strictly check ``verdict.json`` at ``path`` (``label`` names it in
        messages). Raises ``ReportError``, ``FILE[:LINE]: what is wrong``."""
        return read_report(path, label, _parse_verdict)


def _parse_verdict(doc: Document, value: object) -> Verdict:
    if not isinstance(value, dict):
        raise doc.error_at((), f"a verdict must be a JSON object, not {show(value)}")
    top = doc.fields(value)
    top.only(("lane", "status", "verdict", "reason", "reasons", "isolation", "canary", "timings"))
    top.choice("lane", ("verdict",), expected='"verdict"')
    timings = top.mapping("timings", default=None)
    isolation = top.mapping("isolation", default=None)
    canary = top.mapping("canary", default=None)
    verdict = Verdict(
        verdict=Ruling(top.choice("verdict", tuple(EXIT_FOR))),
        reasons=tuple(Reason.parse(r) for r in top.items("reasons")),
        isolation=None if isolation is None else IsolationFacts.parse(isolation),
        canary=None if canary is None else Canary.parse(canary),
        timings=None if timings is None else {k: timings.number(k, lo=0) for k in timings.data},
    )
    # ``status`` and ``reason`` follow from the rest: a file where they disagree contradicts
    # itself and is not believed either way.
    expected = verdict.to_json()
    for key in ("status", "reason"):
        if top.string(key) != expected[key]:
            raise doc.error_at(
                (key,),
                f"'{key}' is {show(top.get(key))}, but the "
                f"verdict and its reasons say {show(expected[key])}",
            )
    return verdict


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
