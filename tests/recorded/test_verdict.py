"""The verdict step (``patchlane.gate.verdict.decide``) on the recorded reports of real
gates: no subprocess, no git (issue 21: a seam, not a mock)."""

from __future__ import annotations

import dataclasses

import pytest

from patchlane.formats.verdict_file import ACCEPT, REJECT, UNDECIDED, Verdict
from patchlane.gate.reports import Evidence, LaneReports
from patchlane.gate.verdict import decide
from patchlane.inputs.jsonio import dumps_report
from tests.recorded.scenarios import NAMES, directory, evidence, scenario

LANES = ("property", "fixture", "freeze", "replay")
# The scenarios whose first reason is a red lane, and that lane.
RED = {"property-reject": "property", "fixture-reject": "fixture", "freeze-reject": "freeze",
       "replay-reject": "replay"}  # fmt: skip


def decided(ev: Evidence, reports: LaneReports | None = None) -> Verdict:
    """``decide`` on ``ev``'s classification and ``reports`` (default: its own), with the
    isolation the recorded gate had (the host's, not a report's)."""
    r = ev.reports if reports is None else reports
    facts = None if ev.classification is None else ev.classification.facts
    assert ev.verdict is not None
    return decide(r.property, r.fixture, r.freeze, r.replay, facts, ev.verdict.isolation)


def swap(reports: LaneReports, **lanes: object) -> LaneReports:
    return dataclasses.replace(reports, **lanes)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", NAMES)
def test_the_recorded_reports_give_the_recorded_verdict_byte_for_byte(name: str) -> None:
    ev = evidence(name)
    assert ev.verdict is not None
    rep = ev.reports.replay
    assert rep is not None
    # As the gate completes it: the timings and, when the replay ran, its canary beside.
    verdict = dataclasses.replace(
        decided(ev), timings=ev.verdict.timings, canary=None if rep.skipped else rep.canary
    )
    recorded = (directory(name) / "verdict.json").read_text(encoding="utf-8")
    assert dumps_report(verdict.to_json()) == recorded
    assert (verdict.verdict, verdict.reasons[0].rule) == (
        scenario(name).verdict,
        scenario(name).rule,
    )


@pytest.mark.parametrize("name", sorted(RED))
def test_a_later_green_lane_never_erases_an_earlier_red_one(name: str) -> None:
    red, green = evidence(name), evidence("accept")
    lane = RED[name]
    later = LANES[LANES.index(lane) + 1 :]
    # Every lane after the red one from the accepted patch, green; its classification too.
    reports = swap(red.reports, **{k: getattr(green.reports, k) for k in later})
    mixed = dataclasses.replace(red, classification=green.classification)
    verdict = decided(mixed, reports)
    assert verdict.verdict == REJECT
    assert red.verdict is not None
    assert verdict.reasons[0] == red.verdict.reasons[0]


@pytest.mark.parametrize("name", sorted(RED))
def test_one_red_lane_from_a_rejected_patch_turns_the_accepted_one_into_a_reject(
    name: str,
) -> None:
    green, lane = evidence("accept"), RED[name]
    reports = swap(green.reports, **{lane: getattr(evidence(name).reports, lane)})
    verdict = decided(green, reports)
    assert verdict.verdict == REJECT
    assert [r.lane for r in verdict.reasons if r.effect == REJECT] == [lane]


@pytest.mark.parametrize("missing", LANES)
def test_a_missing_report_is_undecided_never_a_pass(missing: str) -> None:
    green = evidence("accept")
    verdict = decided(green, swap(green.reports, **{missing: None}))
    assert verdict.verdict == UNDECIDED
    assert [(r.rule, r.lane) for r in verdict.reasons] == [(6, missing)]
    if missing == "replay":
        assert verdict.reasons[0].message == "replay not run: no replay report"


def test_without_the_classification_the_accepted_patch_is_undecided() -> None:
    green = evidence("accept")
    verdict = decided(dataclasses.replace(green, classification=None))
    assert verdict.verdict == UNDECIDED
    assert [(r.rule, r.lane) for r in verdict.reasons] == [(5, "classify")]


@pytest.mark.parametrize(("name", "rule"), [("unmapped-undecided", 5), ("harness-undecided", 6)])
def test_a_green_replay_never_lifts_an_unmapped_path_or_a_harness_change(
    name: str, rule: int
) -> None:
    undecided, green = evidence(name), evidence("accept")
    verdict = decided(undecided, green.reports)
    assert verdict.verdict == UNDECIDED
    assert [r.rule for r in verdict.reasons] == [rule]
    assert undecided.verdict is not None
    assert verdict.reasons[0] == undecided.verdict.reasons[0]


def test_the_unmapped_reason_sends_the_user_to_the_map() -> None:
    ev = evidence("unmapped-undecided")
    assert ev.classification is not None
    assert ev.classification.unmapped == ("scripts/deploy.sh",)
    # The three ways, not only "add an ignore entry": properties, the base's tests alone,
    # or an ignore entry with a reason.
    message = decided(ev).reasons[0].message
    assert "extend the map: name each under lanes.property.paths" in message
    assert "under lanes.replay.paths to judge it by the base's tests alone" in message
    assert message.endswith("or in ignore with a reason")


@pytest.mark.parametrize(("name", "rule"), [("unmapped-undecided", 5), ("harness-undecided", 6)])
def test_a_red_replay_rejects_and_keeps_what_else_is_undecided(name: str, rule: int) -> None:
    undecided, red = evidence(name), evidence("replay-reject")
    verdict = decided(undecided, swap(undecided.reports, replay=red.reports.replay))
    assert verdict.verdict == REJECT
    assert [(r.rule, r.effect) for r in verdict.reasons] == [(4, REJECT), (rule, UNDECIDED)]


def test_only_the_accepted_patch_is_accepted() -> None:
    verdicts = {name: decided(evidence(name)).verdict for name in NAMES}
    assert [n for n, v in verdicts.items() if v == ACCEPT] == ["accept"]
