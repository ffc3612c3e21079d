"""``patchlane demo``: every scenario gets its expected verdict, with the evidence to show it."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from patchlane.demo import patches as demo_patches
from patchlane.demo import repo as demo_repo
from patchlane.demo import scenarios as demo
from patchlane.demo import triage as demo_triage
from patchlane.gate.reports import FILE_NAMES
from patchlane.main import main
from tests.sample import EVIDENCE

# The whole demo end to end; its module-scoped run is built once, on one xdist worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("demo")]


@dataclasses.dataclass(frozen=True)
class DemoRun:
    code: int
    root: Path
    results: dict[str, dict[str, Any]]
    names: list[str]

    def evidence(self, scenario: str, name: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(
            (self.root / "evidence" / scenario / name).read_text(encoding="utf-8")
        )
        return data

    def note(self, scenario: str) -> str:
        return (self.root / "evidence" / scenario / "review.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """One in-process ``patchlane demo --json`` for the whole module (it builds a repo)."""
    root = tmp_path_factory.mktemp("demo") / "kept"
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["demo", "--keep", os.fspath(root), "--json", "-q"])
    rows = json.loads(buffer.getvalue())
    return DemoRun(code, root, {r["scenario"]: r for r in rows}, [r["scenario"] for r in rows])


def _reject_reasons(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in row["reasons"] if r["effect"] == "reject"]


def test_every_scenario_gets_its_expected_verdict(run: DemoRun) -> None:
    assert run.code == 0
    assert run.names == [s.name for s in demo.SCENARIOS]
    assert len(run.names) == len(demo.SCENARIOS) == 21
    for scenario in demo.SCENARIOS:
        row = run.results[scenario.name]
        assert row["got"] == scenario.expected, row
        assert row["ok"] is True
        assert (
            row["exit_code"]
            == {"accept_for_review": 0, "reject": 1, "undecided": 3}[scenario.expected]
        )
        key = row["key_reason"]
        assert (key["rule"], key["lane"]) == (scenario.key.rule, scenario.key.lane)
        verdict = run.evidence(scenario.name, FILE_NAMES["verdict"])
        assert verdict["verdict"] == scenario.expected
        assert verdict["reasons"] == row["reasons"]


def test_every_scenario_leaves_its_evidence(run: DemoRun) -> None:
    for name in run.names:
        out_dir = Path(run.results[name]["out_dir"])
        assert out_dir == run.root / "evidence" / name
        for file in EVIDENCE:
            assert (out_dir / file).is_file(), (name, file)
        classify = run.evidence(name, "classify.json")
        # Each scenario is one commit on its own branch from main.
        assert classify["head"] == run.results[name]["commit"]
        assert classify["map"]["source"] == "base"


def test_no_lane_is_silent_and_nothing_is_accepted_without_replay(run: DemoRun) -> None:
    for scenario in demo.SCENARIOS:
        name = scenario.name
        for lane in ("property", "fixture", "freeze", "replay"):
            report = run.evidence(name, f"{lane}-report.json")
            assert report["lane"] == lane
            assert report["status"] in ("pass", "fail", "not_applicable", "error")
            assert report["reason"], (name, lane)  # silence is never a pass
        if scenario.replay == "none":
            # Without a replay nothing can reach accept_for_review.
            assert run.evidence(name, "replay-report.json")["status"] != "pass"
            assert run.results[name]["got"] != "accept_for_review"


def test_harmless_refactor_passes_the_property_lane(run: DemoRun) -> None:
    row = run.results["refactor-billing"]
    assert _reject_reasons(row) == []
    classify = run.evidence("refactor-billing", "classify.json")
    assert [f["path"] for f in classify["files"]] == ["src/billing/__init__.py"]
    assert classify["lanes"]["property"]["status"] == "applicable"
    assert classify["map_complete"] is True
    prop = run.evidence("refactor-billing", "property-report.json")
    assert prop["status"] == "pass"
    assert prop["failures"] == []
    assert {(p["source"], p["outcome"]) for p in prop["properties"]} == {
        ("base", "pass"),
        ("head", "pass"),
    }
    assert run.evidence("refactor-billing", "fixture-report.json")["status"] == "not_applicable"
    # The seed's freeze is audited but not in play: the patch does not touch its test.
    freeze = run.evidence("refactor-billing", "freeze-report.json")
    assert freeze["status"] == "pass"
    assert [r["in_play"] for r in freeze["records"]] == [False]


def test_a_refund_over_the_charge_is_rejected_with_a_reproducible_counterexample(
    run: DemoRun,
) -> None:
    row = run.results["refund-over-charge"]
    assert [r["rule"] for r in _reject_reasons(row)] == [1]
    prop = run.evidence("refund-over-charge", "property-report.json")
    failure = prop["failures"][0]
    assert failure["property"] == "prop_refund_never_exceeds_charge"
    assert failure["seed"] == demo.DEMO_SEED
    charge, refund = failure["arguments"]
    assert refund > charge
    # The counterexample reproduces on its own: exactly that case, exit 1.
    repo = run.root / "repo"
    argv = ["--repo", os.fspath(repo), "-q", "property", "--base", "main", "--head"]
    argv += ["refund-over-charge", "--seed", str(failure["seed"])]
    argv += ["--only", failure["property"], "--case", str(failure["case_index"])]
    assert main(argv) == 1


def test_a_gutted_property_is_still_rejected_from_the_base(run: DemoRun) -> None:
    row = run.results["gutted-property"]
    assert [r["rule"] for r in _reject_reasons(row)] == [1]
    prop = run.evidence("gutted-property", "property-report.json")
    assert {f["source"] for f in prop["failures"]} == {"base"}
    cls = run.evidence("gutted-property", "classify.json")
    assert {"path": "checks/billing_props.py", "kind": "property module"} in cls[
        "control_plane_details"
    ]


def test_code_that_phones_home_is_rejected_not_connected(run: DemoRun) -> None:
    row = run.results["phone-home"]
    assert [r["rule"] for r in _reject_reasons(row)] == [1]
    prop = run.evidence("phone-home", "property-report.json")
    assert prop["failures"] and all("socket" in f["message"] for f in prop["failures"])


def test_silent_fixture_edit_is_rejected_naming_the_file(run: DemoRun) -> None:
    row = run.results["silent-fixture-edit"]
    assert [r["rule"] for r in _reject_reasons(row)] == [2]
    report = run.evidence("silent-fixture-edit", "fixture-report.json")
    assert report["status"] == "fail"
    assert report["changed"] == [demo_patches.INVOICE_MIN]
    assert report["missing"] == [] and report["extra"] == []


def test_reviewed_relock_is_not_rejected_and_shows_its_reason(run: DemoRun) -> None:
    row = run.results["fixture-relock"]
    assert _reject_reasons(row) == []
    report = run.evidence("fixture-relock", "fixture-report.json")
    assert report["status"] == "pass"
    assert report["changed"] == [] and report["missing"] == [] and report["extra"] == []
    assert demo_patches.RELOCK_REASON in json.dumps(report)
    assert demo_patches.RELOCK_REASON in run.note("fixture-relock")
    classify = run.evidence("fixture-relock", "classify.json")
    assert demo_patches.LOCK in classify["control_plane"]


def test_hand_edited_lock_with_the_old_reason_is_rejected(run: DemoRun) -> None:
    row = run.results["hand-edited-lock"]
    assert [r["rule"] for r in _reject_reasons(row)] == [2]
    report = run.evidence("hand-edited-lock", "fixture-report.json")
    assert report["status"] == "fail"
    # The bytes match the pasted hash: it is the unchanged reason that makes it red.
    assert report["changed"] == []
    assert [e["lock"] for e in report["lock_errors"]] == [demo_patches.LOCK]
    assert "keeps the base's reason" in report["lock_errors"][0]["problem"]
    assert report["lock_updates"] == []


def test_unmapped_path_asks_to_extend_the_map(run: DemoRun) -> None:
    row = run.results["unmapped-path"]
    assert _reject_reasons(row) == []
    assert "extend the map" in row["key_reason"]["message"]
    classify = run.evidence("unmapped-path", "classify.json")
    assert classify["unmapped"] == ["scripts/deploy.sh"]
    assert classify["map_complete"] is False


def test_a_patch_cannot_ignore_its_own_change(run: DemoRun) -> None:
    row = run.results["map-ignores-itself"]
    assert "extend the map" in row["key_reason"]["message"]
    classify = run.evidence("map-ignores-itself", "classify.json")
    assert classify["map"] == {"path": "review-map.yml", "source": "base", "changed_by_patch": True}
    assert classify["unmapped"] == ["scripts/deploy.sh"]
    assert "review-map.yml" in classify["control_plane"]
    assert "review-map.yml" in run.note("map-ignores-itself")


def test_conftest_hook_is_a_harness_change(run: DemoRun) -> None:
    row = run.results["conftest-hook"]
    assert "test harness" in row["key_reason"]["message"]
    assert "tests/conftest.py" in row["key_reason"]["message"]
    classify = run.evidence("conftest-hook", "classify.json")
    assert classify["harness_changed"] is True
    assert classify["control_plane"] == ["tests/conftest.py"]
    assert classify["map_complete"] is True
    assert "tests/conftest.py" in run.note("conftest-hook")


def test_symlinked_fixture_is_rejected(run: DemoRun) -> None:
    row = run.results["fixture-symlink"]
    assert [r["rule"] for r in _reject_reasons(row)] == [2]
    report = run.evidence("fixture-symlink", "fixture-report.json")
    assert report["status"] == "fail"
    assert demo_patches.INVOICE_REFUND in json.dumps(report)


def test_human_output_shows_verdicts_and_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The whole table is checked against the module's full run (test_every_scenario...);
    # the text form is checked on one scenario of each verdict, to keep the suite quick.
    wanted = ("refactor-replayed", "silent-fixture-edit", "unmapped-path")
    monkeypatch.setattr(demo, "SCENARIOS", tuple(s for s in demo.SCENARIOS if s.name in wanted))
    root = tmp_path / "human"
    assert main(["-v", "demo", "--keep", os.fspath(root)]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    header = next(line for line in lines if line.startswith("scenario "))
    assert header.split()[:5] == ["scenario", "expected", "got", "ok", "evidence"]
    for scenario in demo.SCENARIOS:
        row = next(line for line in lines if line.startswith(scenario.name + " "))
        cells = row.split()
        assert cells[1:5] == [
            scenario.expected,
            scenario.expected,
            "yes",
            f"evidence/{scenario.name}/",
        ]
    assert "3 of 3 scenarios got the expected verdict" in captured.out
    assert f"{root.resolve()}/evidence/SCENARIO/" in captured.out
    # Progress goes to stderr (with -v, as off a terminal), one line before and one after each scenario.
    progress = [line for line in captured.err.splitlines() if line.startswith("patchlane: demo ")]
    assert len(progress) == 2 * len(demo.SCENARIOS)
    # The triage section comes after the scenarios' lines, under its own heading: every
    # candidate as expected, the ones whose branch the demo did not gate committed first.
    section = captured.out.split("\ntriage: ", 1)[1].splitlines()
    assert section[1].split()[:3] == ["patchlane", "--repo", f"{root.resolve()}/repo"]
    assert "triage --base main" in section[1] and "-j 2" in section[1]
    table = section[section.index("") + 1 :]
    assert table[0].split()[:5] == ["candidate", "expected", "got", "ok", "evidence"]
    for case in demo_triage.TRIAGE_CASES:
        row = next(line for line in table if line.startswith(case.name + " "))
        evidence = "-" if case.expected == "does_not_apply" else f"triage/{case.name}/"
        assert row.split()[1:5] == [case.expected, case.expected, "yes", evidence]
    assert "6 of 6 triage candidates got the expected verdict" in captured.out
    assert f"{root.resolve()}/triage/triage.md" in captured.out
    triage_progress = [
        line for line in captured.err.splitlines() if line.startswith("patchlane: triage")
    ]
    assert len(triage_progress) == 1 + len(demo_triage.TRIAGE_CASES)


def test_a_wrong_expectation_fails_the_demo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    silent = next(s for s in demo.SCENARIOS if s.name == "silent-fixture-edit")
    wrong = dataclasses.replace(silent, expected="accept_for_review")
    monkeypatch.setattr(demo, "SCENARIOS", (demo.SCENARIOS[0], wrong))
    # The triage run is cut to its candidate that does not apply (no gate): kept quick.
    monkeypatch.setattr(demo_triage, "TRIAGE_CASES", demo_triage.TRIAGE_CASES[-1:])
    assert main(["demo", "--keep", os.fspath(tmp_path / "w")]) == 1
    out = capsys.readouterr().out
    assert "1 of 2 scenarios" in out
    assert any(
        line.startswith("silent-fixture-edit ") and " NO " in line for line in out.splitlines()
    )


def test_keep_must_be_new_or_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "mine.txt").write_text("keep me\n")
    assert main(["demo", "--keep", os.fspath(full)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert (full / "mine.txt").read_text() == "keep me\n"


def test_default_is_a_new_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", os.fspath(tmp_path))
    root = demo_repo.prepare_root(None)
    assert root.parent == tmp_path and root.name.startswith("patchlane-demo-")
    assert list(root.iterdir()) == []


def test_the_example_repository_is_reproducible(tmp_path: Path) -> None:
    first = demo_repo.make_repo(tmp_path / "a")
    second = demo_repo.make_repo(tmp_path / "b")
    assert first.git("rev-parse", "main") == second.git("rev-parse", "main")
    assert first.git("status", "--porcelain") == ""


def test_a_patch_relying_on_an_expired_freeze_is_rejected(run: DemoRun) -> None:
    row = run.results["expired-freeze"]
    assert [r["rule"] for r in _reject_reasons(row)] == [3]
    freeze = run.evidence("expired-freeze", "freeze-report.json")
    assert freeze["today"] == "2026-10-20"
    record = freeze["records"][0]
    assert (record["id"], record["in_play"], record["failed_rules"]) == (
        "billing-clock-skew",
        True,
        [1],
    )
    assert freeze["skippable"] == []


def test_an_unexpired_freeze_in_play_is_skippable(run: DemoRun) -> None:
    assert _reject_reasons(run.results["unexpired-freeze"]) == []
    freeze = run.evidence("unexpired-freeze", "freeze-report.json")
    assert freeze["skippable"] == ["tests/test_billing.py::test_invoice_timestamp_order"]
    assert "billing-clock-skew (expires 2026-10-08)" in run.note("unexpired-freeze")


def test_an_old_expired_freeze_does_not_reject_an_unrelated_patch(run: DemoRun) -> None:
    assert _reject_reasons(run.results["stale-freeze-unrelated"]) == []
    freeze = run.evidence("stale-freeze-unrelated", "freeze-report.json")
    assert freeze["today"] == "2026-11-29"
    assert freeze["records"][0]["in_play"] is False
    assert 1 in freeze["records"][0]["failed_rules"]


def test_a_good_patch_is_accepted_for_review_after_a_local_replay(run: DemoRun) -> None:
    assert run.results["refactor-billing"]["got"] == "undecided"
    assert run.results["refactor-replayed"]["got"] == "accept_for_review"
    replay = run.evidence("refactor-replayed", "replay-report.json")
    assert (replay["status"], replay["outcome"]) == ("pass", "pass")
    receipt_bytes = (run.root / "evidence" / "refactor-replayed" / "receipt.json").read_bytes()
    assert hashlib.sha256(receipt_bytes).hexdigest() == replay["receipt_sha256"]
    assert replay["receipt_sha256"] in run.note("refactor-replayed")
    # The slice is bounded: a change to billing replays billing's tests, not quota's.
    slice_ids = (
        (run.root / "evidence" / "refactor-replayed" / "replay-slice.txt").read_text().split()
    )
    assert slice_ids and all(n.startswith("tests/test_billing.py::") for n in slice_ids)
    assert replay["slice_count"] < replay["suite_size"]


def test_a_regression_no_property_covers_is_caught_only_by_the_replay(run: DemoRun) -> None:
    assert run.results["invoice-regression"]["got"] == "undecided"
    row = run.results["invoice-regression-replayed"]
    assert [r["rule"] for r in _reject_reasons(row)] == [4]
    replay = run.evidence("invoice-regression-replayed", "replay-report.json")
    assert replay["failed"] == ["tests/test_billing.py::test_invoice_refund_cases"]


def test_only_a_frozen_node_failing_is_accepted_with_the_skip_shown(run: DemoRun) -> None:
    assert run.results["frozen-test-fails"]["got"] == "accept_for_review"
    receipt = run.evidence("frozen-test-fails", "receipt.json")
    frozen = "tests/test_billing.py::test_invoice_timestamp_order"
    assert receipt["skipped_by_freeze"] == [frozen]
    assert frozen not in receipt["failed_nodeids"]
    note = run.note("frozen-test-fails")
    assert "billing-clock-skew (expires 2026-10-08)" in note
    assert f"skipped by freeze: {frozen}" in note


def test_a_conftest_hook_is_not_accepted_even_after_its_own_replay(run: DemoRun) -> None:
    row = run.results["conftest-hook-replayed"]
    assert row["got"] == "undecided"
    assert run.evidence("conftest-hook-replayed", "replay-report.json")["status"] == "pass"


def _triage_rows(run: DemoRun) -> dict[str, dict[str, Any]]:
    text = (run.root / "triage" / "triage.jsonl").read_text(encoding="utf-8")
    return {row["name"]: row for row in map(json.loads, text.splitlines())}


def test_the_triage_run_gives_every_candidate_its_expected_verdict(run: DemoRun) -> None:
    out = run.root / "triage"
    assert (out / "triage.md").is_file() and (out / "triage.jsonl").is_file()
    rows = _triage_rows(run)
    # In the order given: the directory's diffs by name, then the predictions by line.
    assert [(name, row["verdict"]) for name, row in rows.items()] == [
        ("invoice-regression", "reject"),
        ("silent-fixture-edit", "reject"),
        ("stale-context", "does_not_apply"),
        ("unmapped-path", "undecided"),
        ("agent-a__billing-42", "accept_for_review"),
        ("agent-b__billing-42", "reject"),
    ]
    assert {c.name: c.expected for c in demo_triage.TRIAGE_CASES} == {
        name: row["verdict"] for name, row in rows.items()
    }
    predictions = os.fspath(run.root / demo_triage.PREDICTIONS)
    assert rows["agent-a__billing-42"]["source"] == f"{predictions}:1"
    assert rows["agent-b__billing-42"]["source"] == f"{predictions}:2"
    assert rows["invoice-regression"]["source"] == os.fspath(
        run.root / demo_triage.PATCH_DIR / "invoice-regression.diff"
    )
    for name, row in rows.items():
        if row["evidence"] is None:
            continue
        assert row["evidence"] == name and row["kind"] == "patch"
        verdict = json.loads((out / name / FILE_NAMES["verdict"]).read_text(encoding="utf-8"))
        assert verdict["verdict"] == row["verdict"]
    # Each diff is its scenario's branch, applied to main: the same verdict as the gate gave
    # that branch under the same --replay.
    assert rows["invoice-regression"]["reason"].startswith("replay: ")
    assert run.results["invoice-regression-replayed"]["got"] == "reject"
    md = (out / "triage.md").read_text(encoding="utf-8")
    table = md.split("| --- | --- | --- | --- | --- |\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(table) == 6  # best first, the candidate that does not apply last
    assert table[0].startswith(
        "| [agent-a\\_\\_billing-42](agent-a__billing-42/) | accept_for_review |"
    )
    assert table[-1].startswith("| stale-context | does_not_apply |")


def test_a_candidate_that_does_not_apply_is_a_row_not_an_abort(run: DemoRun) -> None:
    row = _triage_rows(run)["stale-context"]
    assert (row["verdict"], row["exit_code"], row["head"], row["evidence"]) == (
        "does_not_apply",
        2,
        None,
        None,
    )
    assert "does not apply" in row["reason"]
    assert "src/billing/__init__.py hunk @@ -33,4 +33,4 @@" in row["reason"]
    assert not (run.root / "triage" / "stale-context").exists()
    # The others were gated all the same, and the demo passed.
    assert run.code == 0
    assert sum(r["evidence"] is not None for r in _triage_rows(run).values()) == 5


def test_a_wrong_triage_expectation_fails_the_demo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = {c.name: c for c in demo_triage.TRIAGE_CASES}
    wrong = dataclasses.replace(cases["silent-fixture-edit"], expected="accept_for_review")
    monkeypatch.setattr(demo, "SCENARIOS", ())
    monkeypatch.setattr(demo_triage, "TRIAGE_CASES", (wrong, cases["stale-context"]))
    assert main(["demo", "--keep", os.fspath(tmp_path / "w")]) == 1
    out = capsys.readouterr().out
    assert "1 of 2 triage candidates got the expected verdict" in out
    row = next(line for line in out.splitlines() if line.startswith("silent-fixture-edit "))
    assert row.split()[1:4] == ["accept_for_review", "reject", "NO"]
