"""The review note's renderer (``patchlane.gate.review.build_note``) on the recorded
evidence of real gates: the recorded ``review.md`` comes out, byte for byte."""

from __future__ import annotations

import dataclasses
import hashlib

import jsonschema
import pytest

from patchlane.gate.review import NOT_REVIEWED, build_note
from patchlane.schemas import load_schema
from tests.recorded.scenarios import NAMES, directory, evidence, scenario


@pytest.mark.parametrize("name", NAMES)
def test_the_recorded_reports_render_the_recorded_note(name: str) -> None:
    ev = evidence(name)
    note = build_note(ev.classification, ev.reports, ev.verdict)
    assert note.to_markdown() == (directory(name) / "review.md").read_text(encoding="utf-8")
    assert note.verdict == scenario(name).verdict
    jsonschema.validate(note.to_json(), load_schema("review-note"))


@pytest.mark.parametrize("lane", ["property", "fixture", "freeze"])
def test_a_missing_lane_report_leaves_the_accepted_note_not_reviewed(lane: str) -> None:
    ev = evidence("accept")
    reports = dataclasses.replace(ev.reports, **{lane: None})
    note = build_note(ev.classification, reports, ev.verdict)
    assert not note.reviewed
    text = note.to_markdown()
    assert f"**{NOT_REVIEWED}**: no evidence for {lane}." in text
    assert f"{NOT_REVIEWED} (no {lane} report)" in text


def test_without_a_replay_report_the_receipt_field_says_undecided() -> None:
    ev = evidence("accept")
    note = build_note(ev.classification, dataclasses.replace(ev.reports, replay=None), ev.verdict)
    assert "- **Replay receipt:** undecided (no replay report)" in note.to_markdown()


@pytest.mark.parametrize("name", [n for n in NAMES if (directory(n) / "receipt.json").exists()])
def test_the_receipt_field_names_the_hash_of_the_recorded_receipt(name: str) -> None:
    digest = hashlib.sha256((directory(name) / "receipt.json").read_bytes()).hexdigest()
    ev = evidence(name)
    assert ev.reports.replay is not None and ev.reports.replay.receipt_sha256 == digest
    field = build_note(ev.classification, ev.reports, ev.verdict).fields[3]
    assert field.text.startswith(f"receipt sha256 {digest}, hash seed ")
