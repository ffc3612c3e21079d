from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from patchlane.errors import ReportError
from patchlane.formats.canary import Canary, CanarySetting
from patchlane.formats.envelope import field_name
from patchlane.formats.facts import PatchFacts
from patchlane.formats.status import Status
from patchlane.formats.verdict_file import ACCEPT, REJECT, UNDECIDED, IsolationFacts, Verdict
from patchlane.gate.verdict import decide
from patchlane.inputs.jsonio import write_json
from patchlane.verdict import lane_verdict
from tests.unknownkey import KEY, add_json_key

COMPLETE = PatchFacts(map_complete=True, map_reason="covered", harness_changed=())


@dataclass(frozen=True)
class LaneResult:
    """A lane report as the verdict reads it (``LaneEvidence``), built from plain words."""

    lane: str
    status: Status
    reason: str
    review_events: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))


def green(lane: str) -> LaneResult:
    return LaneResult(lane, "pass", "ok")


def red(lane: str) -> LaneResult:
    return LaneResult(lane, "fail", "broken")


# The seed's function, written out as its truth table: every input, the expected answer.
SEED_TABLE = {
    (p, f, z, r): (
        "reject"
        if not (p and f and z)
        else {"not_run": "undecided", "fail": "reject", "pass": "accept_for_review"}[r]
    )
    for p, f, z, r in itertools.product(
        [True, False], [True, False], [True, False], ["pass", "fail", "not_run"]
    )
}


@pytest.mark.parametrize(("args", "expected"), sorted(SEED_TABLE.items()))
def test_lane_verdict_matches_the_seed_on_every_input(
    args: tuple[bool, bool, bool, str], expected: str
) -> None:
    assert lane_verdict(*args) == expected


@pytest.mark.parametrize("replay", ["", "PASS", "skipped", "undecided", "accept_for_review"])
def test_lane_verdict_refuses_an_unknown_replay_state(replay: str) -> None:
    with pytest.raises(ValueError, match=replay or "^$"):
        lane_verdict(True, True, True, replay)


def test_unknown_replay_state_is_refused_even_when_a_lane_is_red() -> None:
    # The seed checks the replay state first, so a red lane does not hide a bad argument.
    with pytest.raises(ValueError):
        lane_verdict(False, True, True, "maybe")


def test_the_seeds_own_tests() -> None:
    assert lane_verdict(False, True, True, "pass") == "reject"
    assert lane_verdict(True, True, True, "not_run") == "undecided"


REPLAY_STATUS = {"pass": "pass", "fail": "fail", "not_run": "error"}


@given(st.booleans(), st.booleans(), st.booleans(), st.sampled_from(sorted(REPLAY_STATUS)))
def test_decide_agrees_with_lane_verdict(
    prop_ok: bool, fixture_ok: bool, freeze_ok: bool, replay: str
) -> None:
    verdict = decide(
        green("property") if prop_ok else red("property"),
        green("fixture") if fixture_ok else red("fixture"),
        green("freeze") if freeze_ok else red("freeze"),
        LaneResult("replay", REPLAY_STATUS[replay], "r"),
        COMPLETE,
    )
    assert verdict.verdict == lane_verdict(prop_ok, fixture_ok, freeze_ok, replay)


def test_a_later_green_lane_never_erases_an_earlier_red_one() -> None:
    verdict = decide(red("property"), green("fixture"), green("freeze"), green("replay"), COMPLETE)
    assert verdict.verdict == REJECT
    assert verdict.reasons[0].rule == 1
    assert verdict.exit_code == 1


def test_reasons_come_in_rule_order_and_all_are_kept() -> None:
    verdict = decide(
        red("property"),
        red("fixture"),
        red("freeze"),
        LaneResult("replay", "fail", "tests/test_x.py::test_y failed"),
        PatchFacts(False, "extend the map", ("conftest.py",)),
    )
    assert [r.rule for r in verdict.reasons] == [1, 2, 3, 4, 5, 6]
    assert verdict.verdict == REJECT
    assert verdict.to_json()["reason"].startswith("property red")


def test_a_property_that_errored_is_red() -> None:
    errored = LaneResult("property", "error", "TypeError in apply_refund")
    verdict = decide(errored, green("fixture"), green("freeze"), green("replay"), COMPLETE)
    assert verdict.verdict == REJECT


@pytest.mark.parametrize("missing", ["property", "fixture", "freeze", "replay"])
def test_a_missing_report_is_undecided(missing: str) -> None:
    lanes = {lane: green(lane) for lane in ("property", "fixture", "freeze", "replay")}
    args = [None if lane == missing else lanes[lane] for lane in lanes]
    verdict = decide(args[0], args[1], args[2], args[3], COMPLETE)
    assert verdict.verdict == UNDECIDED
    assert any(r.lane == missing for r in verdict.reasons)


def test_map_incomplete_is_undecided_with_extend_the_map() -> None:
    verdict = decide(
        green("property"),
        green("fixture"),
        green("freeze"),
        green("replay"),
        PatchFacts(False, "scripts/x.sh: extend the map", ()),
    )
    assert verdict.verdict == UNDECIDED
    assert "extend the map" in verdict.reasons[0].message
    assert verdict.exit_code == 3


def test_without_a_classification_nothing_is_accepted() -> None:
    verdict = decide(green("property"), green("fixture"), green("freeze"), green("replay"), None)
    assert verdict.verdict == UNDECIDED


def test_a_harness_change_cannot_be_accepted_from_its_own_replay() -> None:
    verdict = decide(
        green("property"),
        green("fixture"),
        green("freeze"),
        green("replay"),
        PatchFacts(True, "ok", ("tests/conftest.py",)),
    )
    assert verdict.verdict == UNDECIDED
    assert "tests/conftest.py" in verdict.reasons[0].message


def test_a_head_map_the_base_cannot_read_is_undecided_whatever_the_lanes_say() -> None:
    problem = "review-map.yml:2: YAML anchors and aliases are not allowed (the map in head 1234)"
    facts = PatchFacts(True, "ok", (), head_map_problem=problem)
    verdict = decide(green("property"), green("fixture"), green("freeze"), green("replay"), facts)
    assert verdict.verdict == UNDECIDED
    assert [(r.rule, r.lane) for r in verdict.reasons] == [(6, "classify")]
    assert verdict.reasons[0].message.startswith(
        f"the patch's review map cannot be read: {problem}"
    )
    # A red lane still rejects: the bad map only keeps a pass from happening.
    rejected = decide(red("property"), green("fixture"), green("freeze"), green("replay"), facts)
    assert rejected.verdict == REJECT


@pytest.mark.parametrize("status", ["not_applicable", "error"])
def test_a_replay_that_gave_no_evidence_is_undecided(status: str) -> None:
    replay = LaneResult("replay", status, "empty slice")
    verdict = decide(green("property"), green("fixture"), green("freeze"), replay, COMPLETE)
    assert verdict.verdict == UNDECIDED


def test_all_green_is_accept_for_review_and_says_a_person_still_reviews() -> None:
    na = LaneResult("freeze", "not_applicable", "no registry change")
    verdict = decide(green("property"), green("fixture"), na, green("replay"), COMPLETE)
    assert verdict.verdict == ACCEPT
    assert verdict.exit_code == 0
    assert "person" in verdict.reasons[0].message
    assert verdict.to_json()["status"] == "pass"


def test_a_replays_review_events_keep_the_verdict_undecided_but_never_hide_a_reject() -> None:
    events = ("the patch deletes 1 test(s) collected at the base: t.py::a",)
    replay = LaneResult("replay", "pass", "ok", review_events=events)
    verdict = decide(green("property"), green("fixture"), green("freeze"), replay, COMPLETE)
    assert verdict.verdict == UNDECIDED
    assert [(r.rule, r.message) for r in verdict.reasons] == [(6, events[0])]
    failed = LaneResult("replay", "fail", "a node failed", review_events=events)
    assert (
        decide(green("property"), green("fixture"), green("freeze"), failed, COMPLETE).verdict
        == REJECT
    )


@pytest.mark.parametrize(
    "at",
    [(), ("reasons", 0), ("isolation",), ("canary",)],
    ids=["top", "reason", "isolation", "canary"],
)
def test_verdict_json_with_an_unknown_key_is_refused_naming_its_line(
    tmp_path: Path, at: tuple[str | int, ...]
) -> None:
    lanes = [green(lane) for lane in ("property", "fixture", "freeze", "replay")]
    verdict = dataclasses.replace(
        decide(*lanes, COMPLETE, IsolationFacts("bwrap", "bubblewrap 0.8")),
        canary=Canary(("tests/t.py::test_a",), 9, CanarySetting(0.05, 1, "default")),
        timings={"classify": 0.5},
    )
    path = tmp_path / "verdict.json"
    write_json(path, verdict.to_json())
    assert Verdict.read(path) == verdict
    line = add_json_key(path, at)
    with pytest.raises(ReportError) as info:
        Verdict.read(path)
    assert str(info.value).startswith(f"{path}:{line}: {field_name((*at, KEY))}: unknown key")
