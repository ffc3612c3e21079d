from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from patchlane.main import main
from patchlane.schemas import load_schema
from tests.gitrepo import GitRepo
from tests.sample import EVIDENCE, FIXTURE_MAP, FIXTURES, LOCK, make_billing_repo


def gate(repo: GitRepo, out: Path, *extra: str) -> int:
    return main(
        [
            "--repo",
            str(repo.path),
            "-q",
            "gate",
            "--base",
            "main",
            "--seed",
            "20260924",
            "--cases",
            "50",
            "--out-dir",
            str(out),
            *extra,
        ]
    )


def load(out: Path, name: str) -> Any:
    return json.loads((out / name).read_text(encoding="utf-8"))


@pytest.mark.review_map(FIXTURE_MAP)
def test_a_silent_fixture_edit_is_rejected_and_named(billing: GitRepo, tmp_path: Path) -> None:
    billing.write(
        "tests/fixtures/billing/invoice_min.json", '{"charge_cents": 1200, "refund_cents": 1300}\n'
    )
    billing.commit("tidy fixture")
    out = tmp_path / "ev"
    assert gate(billing, out) == 1
    fixture = load(out, "fixture-report.json")
    assert fixture["status"] == "fail"
    assert fixture["changed"] == ["tests/fixtures/billing/invoice_min.json"]
    verdict = load(out, "verdict.json")
    assert verdict["verdict"] == "reject"
    assert verdict["reasons"][0]["rule"] == 2


def test_only_unmapped_paths_is_undecided_and_says_extend_the_map(
    billing: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    billing.write("scripts/deploy.sh", "echo deploy\n")
    billing.commit("add deploy script")
    out = tmp_path / "ev"
    assert (
        main(
            [
                "--repo",
                str(billing.path),
                "gate",
                "--base",
                "main",
                "--seed",
                "1",
                "--out-dir",
                str(out),
            ]
        )
        == 3
    )
    assert "extend the map" in capsys.readouterr().out
    assert load(out, "classify.json")["unmapped"] == ["scripts/deploy.sh"]
    assert load(out, "verdict.json")["reasons"][0]["rule"] == 5


def test_a_malformed_map_is_exit_2_with_file_and_line_and_no_traceback(
    repo: GitRepo, tmp_path: Path
) -> None:
    make_billing_repo(
        repo,
        review_map="lanes:\n  fixture:\n    paths: [tests/]\n    lock: x.json\n    lock: y.json\n",
    )
    repo.branch("agent")
    repo.write("src/billing/x.py", "")
    repo.commit()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "patchlane",
            "--repo",
            str(repo.path),
            "gate",
            "--base",
            "main",
            "--out-dir",
            str(tmp_path / "ev"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "review-map.yml" in proc.stderr and ":5: duplicate key 'lock'" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_every_evidence_file_is_written_and_matches_its_schema(
    billing: GitRepo, tmp_path: Path
) -> None:
    billing.write(
        "src/billing/__init__.py",
        "def apply_refund(charge_cents, refund_cents):\n    return charge_cents - refund_cents  # same\n",
    )
    billing.commit("refactor")
    out = tmp_path / "ev"
    assert gate(billing, out) == 3
    for name in EVIDENCE:
        assert (out / name).is_file(), name
    for name, schema in [
        ("classify.json", "classify"),
        ("property-report.json", "property-report"),
        ("fixture-report.json", "fixture-report"),
        ("freeze-report.json", "freeze-report"),
        ("replay-report.json", "replay-report"),
        ("verdict.json", "verdict"),
    ]:
        jsonschema.validate(load(out, name), load_schema(schema))


def test_replay_none_stops_at_undecided_and_says_so(billing: GitRepo, tmp_path: Path) -> None:
    billing.write("src/billing/__init__.py", "def apply_refund(c, r):\n    return c - r\n")
    billing.commit("refactor")
    out = tmp_path / "ev"
    assert gate(billing, out) == 3
    assert load(out, "property-report.json")["status"] == "pass"
    assert load(out, "freeze-report.json")["status"] in ("pass", "not_applicable")
    replay = load(out, "replay-report.json")
    assert (replay["status"], replay["outcome"]) == ("error", "not_run")
    reasons = load(out, "verdict.json")["reasons"]
    assert [(r["rule"], r["lane"]) for r in reasons] == [(6, "replay")]
    assert "- **Replay receipt:** undecided" in (out / "review.md").read_text()


FREEZE = """\
freezes:
  - id: billing-clock-skew
    nodeid: "tests/test_billing.py::test_invoice_timestamp_order"
    owner: "qa-rotation"
    reason: "wall-clock assertion races the sandbox clock"
    expires: "2026-10-08"
    required_properties:
      - prop_refund_never_exceeds_charge
    fixture_lock: "tests/fixtures/billing/LOCK.json"
"""


@pytest.fixture
def frozen(repo: GitRepo) -> GitRepo:
    make_billing_repo(repo)
    repo.write("tests/flaky-freeze.yml", FREEZE)
    repo.commit("freeze the clock test")
    repo.branch("agent")
    return repo


def test_a_patch_relying_on_an_expired_freeze_is_rejected(frozen: GitRepo, tmp_path: Path) -> None:
    frozen.write("tests/test_billing.py", "def test_invoice_timestamp_order():\n    assert 1\n")
    frozen.commit("touch the frozen test")
    out = tmp_path / "ev"
    assert gate(frozen, out, "--today", "2026-10-20") == 1
    record = load(out, "freeze-report.json")["records"][0]
    assert (record["in_play"], record["ok"], record["failed_rules"]) == (True, False, [1])
    assert load(out, "verdict.json")["reasons"][0]["rule"] == 3


def test_an_unexpired_freeze_in_play_runs_the_properties_it_requires(
    frozen: GitRepo, tmp_path: Path
) -> None:
    frozen.write("tests/test_billing.py", "def test_invoice_timestamp_order():\n    assert 1\n")
    frozen.commit("touch the frozen test")
    out = tmp_path / "ev"
    assert gate(frozen, out, "--today", "2026-09-30") == 3
    # The patch touches no property path, yet rule 3 needs the required property's result.
    assert load(out, "property-report.json")["status"] == "pass"
    freeze = load(out, "freeze-report.json")
    assert freeze["status"] == "pass"
    assert freeze["skippable"] == ["tests/test_billing.py::test_invoice_timestamp_order"]
    assert "billing-clock-skew (expires 2026-10-08)" in (out / "review.md").read_text()


def test_an_old_expired_record_does_not_reject_an_unrelated_patch(
    frozen: GitRepo, tmp_path: Path
) -> None:
    frozen.write("src/billing/__init__.py", "def apply_refund(c, r):\n    return c - r  # same\n")
    frozen.commit("refactor")
    out = tmp_path / "ev"
    assert gate(frozen, out, "--today", "2026-11-29") == 3
    freeze = load(out, "freeze-report.json")
    assert freeze["status"] == "pass"
    assert freeze["records"][0]["in_play"] is False
    assert freeze["skippable"] == []


def test_a_failure_log_brings_a_freeze_into_play(frozen: GitRepo, tmp_path: Path) -> None:
    frozen.write("docs/billing.md", "# Billing\n\nMore words.\n")
    frozen.commit("docs")
    log = tmp_path / "failures.txt"
    log.write_text("FAILED tests/test_billing.py::test_invoice_timestamp_order - clock\n")
    out = tmp_path / "ev"
    assert gate(frozen, out, "--today", "2026-10-20", "--failure-log", str(log)) == 1
    assert load(out, "freeze-report.json")["records"][0]["in_play"] is True


def test_stale_evidence_from_an_earlier_run_is_removed(billing: GitRepo, tmp_path: Path) -> None:
    out = tmp_path / "ev"
    out.mkdir()
    (out / "receipt.json").write_text('{"forged": true}')
    (out / "replay-slice.txt").write_text("tests/x.py::test_y\n")
    billing.write("docs/billing.md", "# Billing, now with more words\n")
    billing.commit()
    gate(billing, out)
    assert not (out / "receipt.json").exists()
    assert not (out / "replay-slice.txt").exists()


@pytest.mark.review_map(FIXTURE_MAP)
def test_a_broken_lock_written_by_the_patch_is_red_not_a_usage_error(
    billing: GitRepo, tmp_path: Path
) -> None:
    billing.write(
        LOCK,
        '{"files": [{"path": "tests/fixtures/billing/invoice_min.json", "sha256": "replace-with-64-hex-chars"}], "reason": "x"}\n',
    )
    billing.commit("lock")
    out = tmp_path / "ev"
    assert gate(billing, out) == 1
    assert load(out, "fixture-report.json")["status"] == "fail"
    assert load(out, "verdict.json")["verdict"] == "reject"


@pytest.mark.review_map(FIXTURE_MAP)
def test_a_lock_update_with_a_new_reason_is_not_rejected_and_the_reason_reaches_the_note(
    billing: GitRepo, tmp_path: Path
) -> None:
    from tests.sample import lock_text

    files = dict(FIXTURES)
    files["tests/fixtures/billing/invoice_min.json"] = (
        '{"charge_cents": 1500, "refund_cents": 200}\n'
    )
    billing.write(
        "tests/fixtures/billing/invoice_min.json", files["tests/fixtures/billing/invoice_min.json"]
    )
    billing.write(LOCK, lock_text(files, reason="charge raised to match the 2026 price list"))
    billing.commit("update fixture with review")
    out = tmp_path / "ev"
    assert gate(billing, out) == 3
    fixture = load(out, "fixture-report.json")
    assert fixture["status"] == "pass"
    assert "charge raised to match the 2026 price list" in (out / "review.md").read_text()
    assert {"path": LOCK, "kind": "fixture lock"} in load(out, "classify.json")[
        "control_plane_details"
    ]


@pytest.mark.review_map(FIXTURE_MAP)
def test_a_lock_rehashed_by_the_patch_with_the_old_reason_is_rejected(
    billing: GitRepo, tmp_path: Path
) -> None:
    from tests.sample import lock_text

    files = dict(FIXTURES)
    files["tests/fixtures/billing/invoice_min.json"] = '{"charge_cents": 1, "refund_cents": 200}\n'
    billing.write(
        "tests/fixtures/billing/invoice_min.json", files["tests/fixtures/billing/invoice_min.json"]
    )
    billing.write(LOCK, lock_text(files))  # same reason as the base lock
    billing.commit("quietly rehash")
    out = tmp_path / "ev"
    assert gate(billing, out) == 1


def test_the_work_tree_does_not_change_the_verdict(billing: GitRepo, tmp_path: Path) -> None:
    billing.write("docs/billing.md", "# more\n")
    billing.commit()
    billing.write("tests/fixtures/billing/invoice_min.json", "uncommitted edit\n")
    billing.write("tests/fixtures/billing/untracked.json", "{}\n")
    out = tmp_path / "ev"
    gate(billing, out)
    fixture = load(out, "fixture-report.json")
    assert fixture["changed"] == [] and fixture["extra"] == []


def test_the_base_map_governs_a_patch_that_edits_the_map(billing: GitRepo, tmp_path: Path) -> None:
    billing.write("scripts/deploy.sh", "echo\n")
    text = (
        billing.path / "review-map.yml"
    ).read_text() + '  - path: "scripts/"\n    reason: "not code"\n'
    billing.write("review-map.yml", text)
    billing.commit("ignore my own script")
    out = tmp_path / "ev"
    assert gate(billing, out) == 3
    cls = load(out, "classify.json")
    assert cls["unmapped"] == ["scripts/deploy.sh"]
    assert cls["map"] == {"path": "review-map.yml", "source": "base", "changed_by_patch": True}
    assert "review-map.yml" in cls["control_plane"]


def test_a_harness_change_is_undecided(billing: GitRepo, tmp_path: Path) -> None:
    billing.write("tests/conftest.py", "def pytest_runtest_makereport(item, call):\n    pass\n")
    billing.commit("speed up tests")
    out = tmp_path / "ev"
    assert gate(billing, out) == 3
    messages = [r["message"] for r in load(out, "verdict.json")["reasons"]]
    assert any("test harness" in m for m in messages)


@pytest.mark.slow
def test_the_same_inputs_give_byte_identical_evidence_but_timings(
    billing: GitRepo, tmp_path: Path
) -> None:
    billing.write("tests/fixtures/billing/invoice_min.json", "changed\n")
    billing.commit()
    a, b = tmp_path / "a", tmp_path / "b"
    gate(billing, a)
    gate(billing, b)
    for name in EVIDENCE:
        first, second = (a / name).read_text(), (b / name).read_text()
        if name.endswith(".json"):
            x, y = json.loads(first), json.loads(second)
            x.pop("timings", None)
            y.pop("timings", None)
            assert x == y, name
        else:
            # The note's one timing: the gate's wall time.
            wall = re.compile(r"^- gate wall time: .*$", re.M)
            assert wall.sub("", first) == wall.sub("", second), name


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--replay", "upload {slice}"], "needs the placeholders"),
        (["--replay", "up {slice} {receipt} {commit}"], "unknown placeholder {commit}"),
        (["--cases", "0"], "--cases 0"),
        (["--failure-log", "/nonexistent/log.xml"], "no such file"),
        (["--today", "2026-13-01"], "is not a date"),
        (["--today", "20261001"], "is not a date"),
    ],
)
def test_bad_options_are_exit_2_with_one_line(
    billing: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    billing.write("docs/x.md", "x\n")
    billing.commit()
    assert gate(billing, tmp_path / "ev", *extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_no_seed_anywhere_is_exit_2(
    billing: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    billing.write("docs/x.md", "x\n")
    billing.commit()
    assert (
        main(
            [
                "--repo",
                str(billing.path),
                "gate",
                "--base",
                "main",
                "--out-dir",
                str(tmp_path / "ev"),
            ]
        )
        == 2
    )
    assert "no seed" in capsys.readouterr().err


def test_the_default_out_dir_is_in_the_repository(billing: GitRepo) -> None:
    billing.write("docs/x.md", "x\n")
    billing.commit()
    cwd = Path.cwd()
    try:
        os.chdir(billing.path / "docs")
        assert main(["-q", "gate", "--base", "main", "--seed", "3"]) == 3
    finally:
        os.chdir(cwd)
    assert (billing.path / ".patchlane" / "verdict.json").is_file()
