"""Every recorded evidence file matches its shipped JSON Schema and its strict reader."""

from __future__ import annotations

import json

import jsonschema
import pytest

from patchlane.formats.receipt import parse_receipt
from patchlane.gate.reports import FILE_NAMES
from patchlane.schemas import load_schema
from tests.recorded.scenarios import NAMES, directory, evidence

SCHEMA_FOR = {
    FILE_NAMES["classify"]: "classify",
    FILE_NAMES["property"]: "property-report",
    FILE_NAMES["fixture"]: "fixture-report",
    FILE_NAMES["freeze"]: "freeze-report",
    FILE_NAMES["replay"]: "replay-report",
    FILE_NAMES["receipt"]: "receipt",
    FILE_NAMES["verdict"]: "verdict",
}
FILES = sorted(
    (name, path.name) for name in NAMES for path in directory(name).iterdir() if path.is_file()
)


@pytest.mark.parametrize(("name", "file"), FILES)
def test_every_recorded_file_is_one_the_gate_writes_and_matches_its_schema(
    name: str, file: str
) -> None:
    path = directory(name) / file
    if file == FILE_NAMES["review"]:
        assert path.read_text(encoding="utf-8").startswith("# patchlane review: ")
        return
    assert file in SCHEMA_FOR, f"{path}: not an evidence file"
    jsonschema.validate(json.loads(path.read_bytes()), load_schema(SCHEMA_FOR[file]))


@pytest.mark.parametrize("name", NAMES)
def test_every_scenario_has_the_gates_evidence_and_the_strict_readers_take_it(name: str) -> None:
    ev = evidence(name)  # raises on a file that is not well formed
    r = ev.reports
    assert ev.classification is not None and ev.verdict is not None
    assert None not in (r.property, r.fixture, r.freeze, r.replay)
    assert (directory(name) / FILE_NAMES["review"]).is_file()
    receipt = directory(name) / FILE_NAMES["receipt"]
    assert receipt.exists() == (r.replay is not None and r.replay.receipt_sha256 is not None)
    if receipt.exists():
        parse_receipt(receipt.read_bytes(), str(receipt))
