"""The verdict: lane reports read in one fixed order (DESIGN.md §1).

A later green lane never erases an earlier red one, lanes are never averaged, and missing
evidence is ``undecided``, never a pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from patchlane.errors import Exit

ACCEPT = "accept_for_review"
REJECT = "reject"
UNDECIDED = "undecided"

EXIT_FOR = {ACCEPT: Exit.GREEN, REJECT: Exit.RED, UNDECIDED: Exit.UNDECIDED}
STATUS_FOR = {ACCEPT: "pass", REJECT: "fail", UNDECIDED: "error"}

HARNESS = "test harness"
# Control files whose change keeps the verdict at ``undecided`` whatever the replay says: a
# hook can rewrite outcomes, bytecode runs instead of the source, attributes change what a
# checkout holds (docs/decisions.md, "Issue 9").
BLOCKING_KINDS = frozenset({HARNESS, "committed bytecode", "checkout attributes"})


def lane_verdict(prop_ok: bool, fixture_ok: bool, freeze_ok: bool, replay: str) -> str:
    """The seed's pure verdict function, with exactly its behaviour.

    Returns ``"reject"``, ``"undecided"`` or ``"accept_for_review"``. Raises ``ValueError``
    for a ``replay`` state other than ``"pass"``, ``"fail"`` or ``"not_run"``.
    """
    if replay not in {"pass", "fail", "not_run"}:
        raise ValueError(replay)
    if not (prop_ok and fixture_ok and freeze_ok):
        return "reject"
    if replay == "not_run":
        return "undecided"
    if replay == "fail":
        return "reject"
    return "accept_for_review"


@dataclass(frozen=True)
class LaneResult:
    """What the verdict needs from one lane report."""

    lane: str
    status: str  # pass | fail | not_applicable | error
    reason: str
    not_built: bool = False
    # Review events a lane found (tests the patch deletes, expectations it edits): each keeps
    # the verdict at undecided (rule 6) whatever the lane's status.
    review_events: tuple[str, ...] = ()

    @property
    def red(self) -> bool:
        # A lane that errored (a property that raised, a lock that cannot be read safely)
        # is red; only a lane that does not exist yet is merely missing evidence.
        return self.status == "fail" or (self.status == "error" and not self.not_built)


@dataclass(frozen=True)
class PatchFacts:
    """What the verdict needs from the classification."""

    map_complete: bool
    map_reason: str
    harness_changed: tuple[str, ...]


@dataclass(frozen=True)
class Reason:
    rule: int
    lane: str
    effect: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "lane": self.lane,
            "effect": self.effect,
            "message": self.message,
        }


@dataclass(frozen=True)
class Verdict:
    verdict: str
    reasons: tuple[Reason, ...]

    @property
    def exit_code(self) -> int:
        return int(EXIT_FOR[self.verdict])

    def to_json(self) -> dict[str, Any]:
        first = self.reasons[0].message if self.reasons else ""
        return {
            "lane": "verdict",
            "status": STATUS_FOR[self.verdict],
            "verdict": self.verdict,
            "reason": first,
            "reasons": [r.to_json() for r in self.reasons],
        }


def decide(
    prop: LaneResult | None,
    fixture: LaneResult | None,
    freeze: LaneResult | None,
    replay: LaneResult | None,
    facts: PatchFacts | None,
) -> Verdict:
    """Apply the reading order of DESIGN.md §1 to the lanes' results.

    ``None`` means the evidence is missing. Returns the ``Verdict`` with every reason that
    fired, in rule order; the verdict is the strongest (reject, then undecided).
    """
    reasons: list[Reason] = []
    missing: list[Reason] = []
    for rule, lane, result in (
        (1, "property", prop),
        (2, "fixture", fixture),
        (3, "freeze", freeze),
    ):
        if result is None:
            missing.append(
                Reason(6, lane, UNDECIDED, f"no {lane} report: the lane's evidence is missing")
            )
        elif result.red:
            reasons.append(Reason(rule, lane, REJECT, f"{lane} red: {result.reason}"))
        elif result.not_built:
            missing.append(
                Reason(6, lane, UNDECIDED, f"{lane} lane gave no evidence: {result.reason}")
            )
    if replay is not None and replay.status == "fail":
        reasons.append(
            Reason(
                4,
                "replay",
                REJECT,
                f"a non-frozen node failed on the replay slice: {replay.reason}",
            )
        )
    if facts is None:
        reasons.append(
            Reason(
                5,
                "classify",
                UNDECIDED,
                "no classification: map coverage and harness changes are unknown",
            )
        )
    elif not facts.map_complete:
        reasons.append(Reason(5, "classify", UNDECIDED, f"map incomplete: {facts.map_reason}"))
    reasons.extend(missing)
    if replay is None:
        reasons.append(Reason(6, "replay", UNDECIDED, "replay not run: no replay report"))
    elif replay.status != "pass" and replay.status != "fail":
        reasons.append(Reason(6, "replay", UNDECIDED, f"replay gave no evidence: {replay.reason}"))
    # A lane's review event is evidence a person must weigh (a deleted test, a fixture
    # whose checkout bytes an attribute rewrites): never a pass.
    for result in (prop, fixture, freeze, replay):
        if result is not None:
            reasons.extend(
                Reason(6, result.lane, UNDECIDED, event) for event in result.review_events
            )
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
    reasons.sort(key=lambda r: r.rule)
    if any(r.effect == REJECT for r in reasons):
        return Verdict(REJECT, tuple(reasons))
    if reasons:
        return Verdict(UNDECIDED, tuple(reasons))
    return Verdict(
        ACCEPT, (Reason(7, "verdict", ACCEPT, "every lane is green; a person still reviews"),)
    )
