from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from patchlane.main import main
from patchlane.schemas import load_schema
from tests.gitrepo import run_patchlane
from tests.unknownkey import KEY, add_json_key


def write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


@pytest.fixture
def reports(tmp_path: Path) -> dict[str, Path]:
    return {
        "property": write(
            tmp_path / "p.json",
            {
                "lane": "property",
                "status": "pass",
                "reason": "ok",
                "seed": 1,
                "cases": 5,
                "failures": [],
                "oracle_findings": [],
            },
        ),
        "fixture": write(
            tmp_path / "f.json", {"lane": "fixture", "status": "pass", "reason": "ok"}
        ),
        "freeze": write(
            tmp_path / "z.json",
            {"lane": "freeze", "status": "not_applicable", "reason": "none", "records": []},
        ),
        "replay": write(
            tmp_path / "r.json", {"lane": "replay", "status": "pass", "reason": "receipt verified"}
        ),
        "classify": write(
            tmp_path / "c.json",
            {"map_complete": True, "map_reason": "ok", "control_plane_details": []},
        ),
    }


def args(
    reports: dict[str, Path], *extra: str, replay: bool = True, classify: bool = True
) -> list[str]:
    out = [
        "verdict",
        "--property-report",
        str(reports["property"]),
        "--fixture-report",
        str(reports["fixture"]),
        "--freeze-report",
        str(reports["freeze"]),
    ]
    if replay:
        out += ["--replay-report", str(reports["replay"])]
    if classify:
        out += ["--classify", str(reports["classify"])]
    return out + list(extra)


def test_all_green_is_accept_for_review(reports: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "verdict.json"
    assert main(args(reports, "--out", str(out))) == 0
    data = json.loads(out.read_text())
    assert data["verdict"] == "accept_for_review"
    jsonschema.validate(data, load_schema("verdict"))


def test_replay_not_given_is_undecided(reports: dict[str, Path]) -> None:
    assert main(args(reports, replay=False)) == 3


def test_without_classification_nothing_is_accepted(reports: dict[str, Path]) -> None:
    assert main(args(reports, classify=False)) == 3


def test_red_fixture_rejects_even_when_replay_passed(
    reports: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    write(
        reports["fixture"],
        {"lane": "fixture", "status": "fail", "reason": "changed: tests/fixtures/a.json"},
    )
    assert main(["--json", *args(reports)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "reject"
    assert data["reasons"][0] == {
        "rule": 2,
        "lane": "fixture",
        "effect": "reject",
        "message": "fixture red: changed: tests/fixtures/a.json",
    }


def test_harness_change_in_classification_keeps_it_undecided(reports: dict[str, Path]) -> None:
    write(
        reports["classify"],
        {
            "map_complete": True,
            "control_plane_details": [{"path": "conftest.py", "kind": "test harness"}],
        },
    )
    assert main(args(reports)) == 3


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"lane": "fixture", "status": "pass", "reason": "ok"}',
            "'lane' is 'fixture', expected 'property'",
        ),
        ('{"lane": "property", "status": "green", "reason": "ok"}', "'status' is 'green'"),
        ('{"lane": "property", "status": "pass"}', "'reason' must be a string"),
        (
            '{"lane": "property",\n "status": "pass",\n "status": "fail", "reason": ""}',
            ":3: duplicate key 'status'",
        ),
        ('{"lane": "property",\n "status": }', ":2: invalid JSON"),
        ("[]", "expected a JSON object"),
    ],
)
def test_a_malformed_report_is_exit_2_with_one_line_naming_the_file(
    reports: dict[str, Path], capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    reports["property"].write_text(content, encoding="utf-8")
    assert main(args(reports)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert str(reports["property"]) in err
    assert message in err
    assert "Traceback" not in err


def test_a_missing_report_file_is_exit_2(
    reports: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    reports["freeze"].unlink()
    assert main(args(reports)) == 2
    assert "no such file" in capsys.readouterr().err


def test_a_replay_reports_review_events_keep_it_undecided(
    reports: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    event = "the patch deletes 1 test(s) collected at the base: tests/t.py::test_a"
    write(
        reports["replay"],
        {"lane": "replay", "status": "pass", "reason": "ok", "review_events": [event]},
    )
    assert main(args(reports, "--json")) == 3
    data = json.loads(capsys.readouterr().out)
    assert [r["message"] for r in data["reasons"]] == [event]


def test_malformed_review_events_are_exit_2(
    reports: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    write(
        reports["replay"],
        {"lane": "replay", "status": "pass", "reason": "ok", "review_events": [1]},
    )
    assert main(args(reports)) == 2
    assert "review_events" in capsys.readouterr().err


@pytest.mark.parametrize("report", ["property", "fixture", "freeze", "replay", "classify"])
def test_a_report_with_an_unknown_key_is_exit_2_naming_the_file_and_line(
    reports: dict[str, Path], report: str
) -> None:
    path = reports[report]
    path.write_text(json.dumps(json.loads(path.read_text()), indent=2), encoding="utf-8")
    line = add_json_key(path)
    proc = run_patchlane(*args(reports))
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{path}:{line}: '{KEY}': unknown key" in err
    assert proc.stdout == b""
