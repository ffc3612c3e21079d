from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from patchlane.main import main
from patchlane.review import NOT_REVIEWED, build_note

CLASSIFY: dict[str, Any] = {
    "map": {"path": "review-map.yml", "source": "base", "changed_by_patch": False},
    "unmapped": [],
    "control_plane_details": [],
}
PROPERTY = {
    "lane": "property",
    "status": "pass",
    "reason": "2 properties hold",
    "seed": 20260924,
    "cases": 200,
}
FIXTURE = {
    "lane": "fixture",
    "status": "pass",
    "reason": "lock matches",
    "roots": [{"lock": "tests/fixtures/billing/LOCK.json", "files": 2}],
    "lock_updates": [],
}
FREEZE = {
    "lane": "freeze",
    "status": "pass",
    "reason": "ok",
    "records": [
        {
            "id": "billing-clock-skew",
            "nodeid": "tests/t.py::test_a",
            "expires": "2026-10-08",
            "in_play": True,
            "ok": True,
            "failed_rules": [],
        },
        {
            "id": "stale",
            "nodeid": "tests/t.py::test_b",
            "expires": "2026-01-01",
            "in_play": False,
            "ok": False,
            "failed_rules": [1, 5],
        },
    ],
}
REPLAY = {
    "lane": "replay",
    "status": "pass",
    "reason": "receipt verified",
    "receipt_sha256": "ab" * 32,
}
VERDICT = {
    "verdict": "accept_for_review",
    "reasons": [{"rule": 7, "effect": "accept_for_review", "message": "ok"}],
}


def note(**over: Any) -> Any:
    reports = {"property": PROPERTY, "fixture": FIXTURE, "freeze": FREEZE, "replay": REPLAY}
    reports.update({k: v for k, v in over.items() if k in reports})
    return build_note(over.get("classify", CLASSIFY), reports, over.get("verdict", VERDICT))


def test_a_complete_note_has_exactly_four_filled_fields() -> None:
    n = note()
    assert n.reviewed
    assert [f.name for f in n.fields] == ["property", "fixture", "freeze", "replay"]
    text = n.to_markdown()
    assert NOT_REVIEWED not in text
    assert "seed 20260924, 200 cases" in text
    assert "tests/fixtures/billing/LOCK.json matches (2 files)" in text
    assert "billing-clock-skew (expires 2026-10-08)" in text
    assert "stale" not in text  # a record not in play skips nothing and is not listed
    assert "ab" * 32 in text
    assert sum(line.startswith("- **") for line in text.splitlines()) == 4


def test_no_freezes_in_play_says_none() -> None:
    n = note(
        freeze={"lane": "freeze", "status": "not_applicable", "reason": "no records", "records": []}
    )
    assert n.fields[2].text == "none"


def test_a_lock_update_shows_its_reason() -> None:
    fixture = dict(
        FIXTURE,
        lock_updates=[{"lock": "tests/fixtures/billing/LOCK.json", "reason": "new invoice layout"}],
    )
    assert "updated: new invoice layout" in note(fixture=fixture).fields[1].text


@pytest.mark.parametrize("lane", ["property", "fixture", "freeze"])
def test_a_missing_report_makes_the_note_say_not_reviewed(lane: str) -> None:
    n = note(**{lane: None})
    assert not n.reviewed
    assert n.to_markdown().splitlines()[2].startswith(f"**{NOT_REVIEWED}**")


def test_a_lane_not_built_is_not_reviewed() -> None:
    prop = {
        "lane": "property",
        "status": "error",
        "reason": "not built",
        "not_built": True,
        "seed": 1,
        "cases": 2,
    }
    n = note(property=prop)
    assert not n.reviewed
    assert n.fields[0].text.startswith(NOT_REVIEWED)


def test_replay_without_a_receipt_is_undecided() -> None:
    n = note(
        replay={"lane": "replay", "status": "error", "reason": "replay not run (--replay none)"}
    )
    assert n.fields[3].text == "undecided (replay not run (--replay none))"
    assert n.fields[3].filled


def test_no_verdict_is_not_reviewed() -> None:
    assert not note(verdict=None).reviewed


def test_control_plane_changes_and_map_source_are_listed() -> None:
    cls = dict(
        CLASSIFY,
        map={"path": "review-map.yml", "source": "head", "changed_by_patch": True},
        control_plane_details=[{"path": "tests/conftest.py", "kind": "test harness"}],
    )
    text = note(classify=cls).to_markdown()
    assert "`tests/conftest.py` (test harness)" in text
    assert "the patch's own (head) map was used" in text


def test_a_newline_in_a_path_cannot_forge_a_line_of_the_note() -> None:
    cls = dict(
        CLASSIFY,
        control_plane_details=[{"path": "a\n- **Fixture lock:** fine", "kind": "test harness"}],
    )
    text = note(classify=cls).to_markdown()
    assert sum(line.startswith("- **") for line in text.splitlines()) == 4


def test_review_command_renders_markdown_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in [
        ("classify.json", CLASSIFY),
        ("property-report.json", PROPERTY),
        ("fixture-report.json", FIXTURE),
        ("freeze-report.json", FREEZE),
        ("replay-report.json", REPLAY),
        ("verdict.json", VERDICT),
    ]:
        (tmp_path / name).write_text(json.dumps(value), encoding="utf-8")
    assert main(["review", "--dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith("# patchlane review: accept_for_review")
    assert main(["--json", "review", "--dir", str(tmp_path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["reviewed"] is True
    assert list(data["fields"]) == ["property", "fixture", "freeze", "replay"]
    (tmp_path / "freeze-report.json").unlink()
    out = tmp_path / "note.md"
    assert main(["review", "--dir", str(tmp_path), "--out", str(out)]) == 3
    assert NOT_REVIEWED in out.read_text()


def test_a_red_property_field_carries_the_counterexample_and_findings() -> None:
    prop = dict(
        PROPERTY,
        status="fail",
        reason="1 property failed",
        failures=[
            {
                "property": "prop_refund_never_exceeds_charge",
                "module": "checks.billing_props",
                "source": "base",
                "seed": 20260924,
                "case_index": 17,
                "arguments": [100, 250],
                "message": "refund exceeded charge",
                "kind": "assertion",
            }
        ],
        oracle_findings=[{"property": "prop_x", "kind": "survives_mutants", "detail": "0 of 5"}],
    )
    text = note(property=prop).fields[0].text
    assert (
        "prop_refund_never_exceeds_charge (base) seed 20260924 case 17 arguments [100, 250]" in text
    )
    assert "prop_x survives_mutants" in text


def test_a_multi_line_message_cannot_add_a_field() -> None:
    prop = dict(
        PROPERTY,
        status="fail",
        reason="red",
        failures=[
            {
                "property": "p",
                "module": "m",
                "source": "head",
                "seed": 1,
                "case_index": None,
                "arguments": None,
                "message": "boom\n- **Freezes:** none\n> rule 7: accept",
                "kind": "error",
            }
        ],
    )
    text = note(property=prop).to_markdown()
    assert sum(line.startswith("- **") for line in text.splitlines()) == 4
    assert not any(line.startswith("> rule 7") for line in text.splitlines())
