"""The lane reports refuse a key their format does not have, at every level
(``formats.fixture_report``, ``freeze_report``, ``property_report``, ``replay_report``).

Each report is written by its writer (``to_json`` through ``write_json``, as the gate writes
it) with every optional part present, so that every object the format holds is there; one
unknown key is added to one object, and the reader must refuse the file with one line
naming the file, the key's line and the key (docs/architecture.md §4). The same files
validate against the shipped schemas, which refuse the unknown key too.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import date
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from patchlane.errors import ReportError
from patchlane.formats.canary import Canary, CanarySetting
from patchlane.formats.envelope import field_name
from patchlane.formats.fixture_report import (
    CheckoutAttribute,
    FixtureReport,
    LockProblem,
    LockUpdate,
    RootResult,
    Timings,
    Unsafe,
)
from patchlane.formats.freeze_report import FreezeReport, RecordResult
from patchlane.formats.property_report import (
    CacheUse,
    ChildTiming,
    Failure,
    IsolationInfo,
    Mutation,
    OracleFinding,
    PropertyReport,
    PropertyRun,
)
from patchlane.formats.replay_report import EditedTest, PrivateFile, ReplayReport
from patchlane.formats.status import Status
from patchlane.inputs.jsonio import write_json
from patchlane.schemas import load_schema
from tests.unknownkey import KEY, add_json_key

COMMIT = "a" * 40
NODE = "tests/test_x.py::test_a"

FIXTURE = FixtureReport(
    status=Status.FAIL,
    reason="1 fixture file changed",
    source="commit",
    commit=COMMIT,
    roots=(RootResult(("fx/",), "fx/LOCK.json", True, 2, "b" * 64, True, "new rows", False),),
    missing=("fx/gone.json",),
    extra=("fx/new.json",),
    changed=("fx/rows.json",),
    unsafe=(Unsafe("fx/link", "a symbolic link"),),
    case_collisions=(("fx/A.json", "fx/a.json"),),
    lock_errors=(LockProblem("fx/LOCK.json", "changed without a new reason"),),
    lock_updates=(LockUpdate("fx/LOCK.json", "new rows"),),
    timings=Timings(0.25, 2, 1),
    checkout_attributes=(CheckoutAttribute("fx/rows.json", "eol", "crlf"),),
    review_events=("a checkout attribute applies to a fixture path",),
)
FREEZE = FreezeReport(
    status=Status.PASS,
    reason="1 record in play passes every rule",
    records=(
        RecordResult(
            "F1", NODE, "ana", date(2026, 10, 8), (), tuple(f"rule {n} holds" for n in range(1, 7))
        ),
    ),
    today=date(2026, 10, 1),
    registry="tests/flaky-freeze.yml",
    registry_source="base",
    max_age_days=14,
    max_extensions=1,
    base=COMMIT,
    head="c" * 40,
    merge_base=COMMIT,
    notes=("one note",),
    seconds=0.5,
    review_events=("look",),
)
PROPERTY = PropertyReport(
    status=Status.FAIL,
    reason="1 of 1 property run(s) failed",
    seed=7,
    cases=20,
    modules=("checks.props",),
    failures=(Failure("prop_a", "checks.props", "head", 7, 3, {"x": 1}, "boom", "assertion"),),
    oracle_findings=(
        OracleFinding(
            module="checks.props", property="prop_a", kind="survives_mutants", detail="2 survive"
        ),
    ),
    base=COMMIT,
    head="c" * 40,
    properties=(PropertyRun("checks.props", "prop_a", "head", "seed", "fail"),),
    mutation=(Mutation("checks.props", "prop_a", 4, 2, "one mutant timed out"),),
    oracle_audit="ran",
    isolation=IsolationInfo("audit", 60.0),
    seconds=1.5,
    children=(ChildTiming("checks.props", "head", "run", 0.5, cached=True),),
    cache=CacheUse(1, 1, 1, 0),
    review_events=("look",),
    skipped_tests=((NODE, "not collected"),),
)
REPLAY = ReplayReport(
    status=Status.PASS,
    reason="the receipt verifies and no node failed",
    outcome="pass",
    slice_sha256="d" * 64,
    receipt_sha256="e" * 64,
    seed=7,
    head=COMMIT,
    hash_seed=12,
    passed=(NODE,),
    signature="absent",
    mode="local",
    slice_count=1,
    suite_size=3,
    private=(PrivateFile("tests/secret.json", "private in the map"),),
    slice_rules={"changed test file": 1},
    dependency_map="off",
    canary=Canary((NODE,), 2, CanarySetting(0.05, 1, "default")),
    plugin_files=(),
    run_problems=(),
    failed_why={},
    skipped_but_pass_at_base=(),
    fail_at_base_too=(),
    base_from_map=(),
    deleted_tests=(),
    edited_expectations=(EditedTest(NODE, "its base version fails at the head"),),
    review_events=(),
    unreached=(),
)

# Every object each report holds (its path), and the report, reader and schema.
CASES: list[tuple[str, Any, tuple[str | int, ...]]] = [
    *(
        ("fixture", FIXTURE, at)
        for at in [
            (),
            ("roots", 0),
            ("unsafe", 0),
            ("lock_errors", 0),
            ("lock_updates", 0),
            ("timings",),
            ("checkout_attributes", 0),
        ]
    ),
    *(("freeze", FREEZE, at) for at in [(), ("records", 0), ("timings",)]),
    *(
        ("property", PROPERTY, at)
        for at in [
            (),
            ("properties", 0),
            ("skipped_tests", 0),
            ("failures", 0),
            ("oracle_findings", 0),
            ("mutation", 0),
            ("isolation",),
            ("timings",),
            ("timings", "children", 0),
            ("timings", "cache"),
        ]
    ),
    *(
        ("replay", REPLAY, at)
        for at in [(), ("private", 0), ("canary",), ("edited_expectations", 0)]
    ),
]


def written(tmp_path: Path, lane: str, report: Any) -> Path:
    """Write ``report`` as the gate does, and return its file."""
    path = tmp_path / f"{lane}-report.json"
    write_json(path, report.to_json())
    return path


@pytest.mark.parametrize(("lane", "report"), [(c[0], c[1]) for c in CASES if c[2] == ()])
def test_the_full_reports_read_back_as_themselves_and_match_their_schemas(
    tmp_path: Path, lane: str, report: Any
) -> None:
    path = written(tmp_path, lane, report)
    assert type(report).read(path) == report
    jsonschema.validate(json.loads(path.read_bytes()), load_schema(f"{lane}-report"))


@pytest.mark.parametrize(
    ("lane", "report", "at"),
    CASES,
    ids=[f"{lane}:{'.'.join(map(str, at)) or 'top'}" for lane, _, at in CASES],
)
def test_an_unknown_key_is_refused_naming_the_file_its_line_and_the_key(
    tmp_path: Path, lane: str, report: Any, at: tuple[str | int, ...]
) -> None:
    path = written(tmp_path, lane, report)
    line = add_json_key(path, at)
    with pytest.raises(ReportError) as info:
        type(report).read(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: {field_name((*at, KEY))}: unknown key"), message
    assert "\n" not in message
    with pytest.raises(jsonschema.ValidationError, match=KEY):
        jsonschema.validate(json.loads(path.read_bytes()), load_schema(f"{lane}-report"))


@pytest.mark.parametrize("lane", ["fixture", "freeze", "property", "replay"])
def test_the_early_versions_not_built_is_still_no_unknown_key(lane: str) -> None:
    # ``not_built`` (every report's envelope) is written by no writer today, and read still.
    report = {"fixture": FIXTURE, "freeze": FREEZE, "property": PROPERTY, "replay": REPLAY}[lane]
    data = {**report.to_json(), "not_built": False}
    assert type(report).from_json(data, "r.json") == report
    jsonschema.validate(data, load_schema(f"{lane}-report"))


def test_a_slice_is_counted_against_the_suite_it_was_drawn_from() -> None:
    # 15 node ids in the slice, 3 of them the patch's own: 12 of the base's 488.
    report = ReplayReport(
        Status.ERROR, "x", mode="local", slice_sha256="d" * 64, slice_count=15,
        suite_size=488, slice_added=3,
    )  # fmt: skip
    assert report.slice_text() == "12 of 488 tests (+3 added by the patch)"
    assert ReplayReport.from_json(report.to_json(), "r.json") == report
    plain = dataclasses.replace(report, slice_added=0, slice_count=12)
    assert plain.slice_text() == "12 of 488 tests"
    # A report with the key is held to it: a slice drawn from a suite it outgrows is refused.
    bad = {**report.to_json(), "slice_count": 492}
    with pytest.raises(ReportError, match="'slice_added': a slice of 492 with 3 added tests"):
        ReplayReport.from_json(bad, "r.json")
    # One written before the key (which could say 489 of 488) is still read.
    old = {k: v for k, v in bad.items() if k != "slice_added"}
    assert ReplayReport.from_json(old, "r.json").slice_added == 0


def test_the_replay_report_writes_its_keys_in_one_order_each_when_it_has_it() -> None:
    # The recorded reports (tests/recorded) hold this order: a receipt's fields, then the
    # slice's, then the rest; ``hash_seed`` follows the receipt's others.
    assert list(REPLAY.to_json()) == [
        *("lane", "status", "reason", "outcome", "slice_sha256", "receipt_sha256", "seed"),
        *("head", "failed", "skipped_by_freeze", "skipped_by_suite", "passed", "signature"),
        *("refusals", "hash_seed", "mode", "slice_count", "suite_size", "slice_added"),
        "private",
        *("slice_rules", "dependency_map", "canary", "plugin_files", "run_problems"),
        *("failed_why", "skipped_but_pass_at_base", "fail_at_base_too", "base_from_map"),
        *("deleted_tests", "edited_expectations", "review_events", "unreached"),
    ]
    # No receipt: none of its fields, even those it would write as null; the slice's
    # digest after the mode. A slice's size and private files are written with its count.
    unverified = ReplayReport(
        Status.ERROR, "no receipt", mode="local", slice_sha256="d" * 64, slice_count=0
    )
    assert unverified.to_json() == {
        "lane": "replay",
        "status": "error",
        "reason": "no receipt",
        "mode": "local",
        "slice_sha256": "d" * 64,
        "slice_count": 0,
        "suite_size": None,
        "slice_added": 0,
        "private": [],
    }
    assert list(unverified.to_json())[3:5] == ["mode", "slice_sha256"]
