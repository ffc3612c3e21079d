"""Every evidence file has one strict reader, and what the gate writes reads back as itself.

The gate works on typed reports and writes JSON only at the edge; ``patchlane verdict`` and
``review`` read the files back. A real gate run's evidence, read and written again, must give
the same bytes, the same verdict and the same note.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from patchlane.errors import ReportError
from patchlane.formats.fixture_report import FixtureReport
from patchlane.formats.freeze_report import FreezeReport
from patchlane.formats.property_report import PropertyReport
from patchlane.formats.replay_report import ReplayReport
from patchlane.formats.status import Status
from patchlane.formats.verdict_file import Verdict
from patchlane.gate.reports import FILE_NAMES, LaneReports, read_evidence
from patchlane.gate.review import build_note
from patchlane.gate.verdict import decide
from patchlane.inputs.jsonio import dumps_report
from patchlane.main import main
from patchlane.project.classify import ClassificationSummary, classify
from tests.gitrepo import GitRepo
from tests.sample import make_billing_repo

READERS: dict[str, Any] = {
    "property": PropertyReport,
    "fixture": FixtureReport,
    "freeze": FreezeReport,
    "replay": ReplayReport,
    "verdict": Verdict,
}


@pytest.mark.slow
def test_a_gate_runs_evidence_reads_back_as_itself(repo: GitRepo, tmp_path: Path) -> None:
    make_billing_repo(repo)
    repo.branch("agent")
    repo.write("tests/test_billing.py", "def test_invoice_timestamp_order():\n    assert 2 > 1\n")
    repo.commit("tidy the clock test")
    out = tmp_path / "ev"
    argv = ["--repo", str(repo.path), "-q", "gate", "--base", "main", "--seed", "7"]
    assert main([*argv, "--cases", "20", "--replay", "local", "--out-dir", str(out)]) == 0
    for name, reader in READERS.items():
        path = out / FILE_NAMES[name]
        assert dumps_report(reader.read(path).to_json()) == path.read_text("utf-8"), name
    evidence = read_evidence(out)
    reports = evidence.reports
    assert evidence.classification is not None and evidence.verdict is not None
    assert reports.replay is not None and reports.replay.receipt_sha256 is not None
    cls = classify(repo.path, "main", "HEAD", None)
    assert evidence.classification == cls.summary()
    facts = evidence.classification.facts
    # Which isolation ran is a fact of the machine, not of the reports: read back with them.
    isolation = evidence.verdict.isolation
    assert isolation is not None
    verdict = decide(
        reports.property, reports.fixture, reports.freeze, reports.replay, facts, isolation
    )
    assert verdict == evidence.verdict
    note = build_note(evidence.classification, reports, evidence.verdict)
    assert note.to_markdown() == (out / FILE_NAMES["review"]).read_text("utf-8")


def test_missing_files_read_as_missing(tmp_path: Path) -> None:
    (tmp_path / FILE_NAMES["fixture"]).write_text(
        json.dumps({"lane": "fixture", "status": "not_applicable", "reason": "no lane"})
    )
    evidence = read_evidence(tmp_path)
    assert evidence.classification is None and evidence.verdict is None
    assert evidence.reports == LaneReports(fixture=FixtureReport.not_applicable("no lane"))
    assert [r.lane for r in evidence.reports.present()] == ["fixture"]


@pytest.mark.parametrize("lane", ["property", "fixture", "freeze", "replay"])
def test_a_not_built_flag_is_accepted_and_the_status_decides(lane: str) -> None:
    # Early versions wrote ``not_built: true`` for a lane that did not exist yet. The key is
    # still read (a boolean), and means nothing: an ``error`` is red like any other.
    data: dict[str, Any] = {"lane": lane, "status": "error", "reason": "x", "not_built": True}
    required = {"property": {"failures": [], "oracle_findings": []}, "freeze": {"records": []}}
    data.update(required.get(lane, {}))
    report = READERS[lane].from_json(data, f"{lane}-report.json")
    assert report.status == Status.ERROR and report.status.red
    with pytest.raises(ReportError, match="'not_built' must be true or false"):
        READERS[lane].from_json({**data, "not_built": "yes"}, f"{lane}-report.json")


@pytest.mark.parametrize(
    ("reader", "data", "message"),
    [
        (PropertyReport, {"lane": "property", "status": "pass", "reason": "", "failures": {}},
         "'failures' must be a list"),
        (PropertyReport, {"lane": "property", "status": "pass", "reason": "", "failures": [],
                          "oracle_findings": [], "seed": "1"}, "'seed' must be an integer"),
        (FixtureReport, {"lane": "fixture", "status": "pass", "reason": "", "changed": "a"},
         "'changed' must be a list of strings"),
        (FixtureReport, {"lane": "fixture", "status": "pass", "reason": "", "commit": 5},
         "'commit' must be a string or null, not 5"),
        (FixtureReport, {"lane": "fixture", "status": "pass", "reason": "", "roots": [5]},
         "'roots[0]' must be a JSON object, not 5"),
        (FixtureReport, {"lane": "fixture", "status": "pass", "reason": "",
                         "roots": [{"paths": [], "lock": "L"}]},
         "'roots[0].ok' must be present (it is missing)"),
        (FixtureReport, {"lane": "fixture", "status": "pass", "reason": "",
                         "timings": {"hashed": -1}},
         "'timings.hashed' must be an integer of at least 0, not -1"),
        (FreezeReport, {"lane": "freeze", "status": "pass", "reason": "", "records": [],
                        "timings": {"seconds": -0.5}},
         "'timings.seconds' must be a number of at least 0, not -0.5"),
        (ReplayReport, {"lane": "replay", "status": "pass", "reason": "", "receipt_sha256": "ab"},
         "'receipt_sha256' must be a sha256"),
        (ReplayReport, {"lane": "replay", "status": "pass", "reason": "", "failed_why": {"a": 1}},
         "'failed_why.a' must be a string"),
        (ClassificationSummary, {"map_complete": True, "unmapped": [1]},
         "'unmapped' must be a list of strings"),
        (ClassificationSummary, {"map_complete": True, "map": {"source": "elsewhere"}},
         "'map.source' must be one of base, head, file"),
        (Verdict, {"lane": "verdict", "status": "pass", "verdict": "maybe", "reason": "",
                   "reasons": []}, "'verdict' must be one of"),
        (Verdict, {"lane": "verdict", "status": "fail", "verdict": "accept_for_review",
                   "reason": "", "reasons": []}, "'status' is \"fail\", but the verdict"),
    ],
)  # fmt: skip
def test_a_value_of_the_wrong_type_is_refused_naming_the_file(
    reader: Any, data: dict[str, Any], message: str
) -> None:
    with pytest.raises(ReportError) as info:
        reader.from_json(data, "x.json")
    assert str(info.value).startswith("x.json: ")
    assert message in str(info.value)


def test_a_file_names_the_line_of_the_bad_value(tmp_path: Path) -> None:
    path = tmp_path / "fixture-report.json"
    data = {
        "lane": "fixture",
        "status": "pass",
        "reason": "",
        "roots": [{"paths": [], "lock": "L"}],
    }
    path.write_text(json.dumps(data, indent=2))
    with pytest.raises(ReportError, match=r"fixture-report\.json:6: 'roots\[0\]\.ok' must be"):
        FixtureReport.read(path)
