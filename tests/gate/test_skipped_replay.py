"""A replay skipped because an earlier lane is red: reported as skipped, left out of a
reject's summary, and the verdict read exactly as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.gitrepo import GitRepo, run_patchlane
from tests.sample import FIXTURE_MAP

MIN = "tests/fixtures/billing/invoice_min.json"


def load(out: Path, name: str) -> dict[str, object]:
    data = json.loads((out / name).read_text("utf-8"))
    assert isinstance(data, dict)
    return data


def replay_lines(stdout: str) -> list[str]:
    """The summary's lines about the replay: its lane line and its reasons."""
    return [
        line for line in stdout.splitlines() if line.startswith("replay:") or "[replay]" in line
    ]


@pytest.mark.slow
@pytest.mark.review_map(FIXTURE_MAP)
def test_a_reject_leaves_the_skipped_replay_out_of_its_summary(
    billing: GitRepo, tmp_path: Path
) -> None:
    billing.write(MIN, '{"charge_cents": 1}\n')
    billing.commit("silent fixture edit")
    out = tmp_path / "ev"
    proc = run_patchlane(
        "gate", "--base", "main", "--seed", "1", "--replay", "local", "--out-dir", out,
        cwd=billing.path,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    stdout = proc.stdout.decode()
    assert not replay_lines(stdout)
    assert "fixture: fail" in stdout
    replay = load(out, "replay-report.json")
    # The report keeps the contract's status (no evidence) and says why in its outcome.
    assert (replay["status"], replay["outcome"]) == ("error", "skipped")
    # verdict.json keeps every reason the rules gave, the replay's included.
    reasons = load(out, "verdict.json")["reasons"]
    assert isinstance(reasons, list)
    assert [(r["rule"], r["lane"]) for r in reasons] == [(2, "fixture"), (6, "replay")]
    note = (out / "review.md").read_text("utf-8")
    assert "- **Replay receipt:** skipped: an earlier lane is red, so no replay ran" in note
    assert "rule 6" not in note
    assert "> rule 2: fixture red" in note
    # ``patchlane verdict`` on the same reports agrees, and summarises the same way.
    again = run_patchlane(
        "verdict",
        "--property-report", out / "property-report.json",
        "--fixture-report", out / "fixture-report.json",
        "--freeze-report", out / "freeze-report.json",
        "--replay-report", out / "replay-report.json",
        cwd=billing.path,
    )  # fmt: skip
    assert again.returncode == 1
    assert not replay_lines(again.stdout.decode())
    # ``review`` re-renders the same note from the evidence.
    review = run_patchlane("review", "--dir", out, cwd=billing.path)
    assert review.returncode == 0, review.stderr
    assert review.stdout.decode() == note


@pytest.mark.review_map(FIXTURE_MAP)
def test_a_reject_without_replay_asked_for_shows_no_replay_line_either(
    billing: GitRepo, tmp_path: Path
) -> None:
    billing.write("tests/fixtures/billing/new.json", "{}\n")
    billing.commit("new fixture, lock not updated")
    out = tmp_path / "ev"
    proc = run_patchlane("gate", "--base", "main", "--out-dir", out, cwd=billing.path)
    assert proc.returncode == 1
    # --replay none (the default): the replay would not have run here anyway.
    assert load(out, "replay-report.json")["outcome"] == "skipped"
    assert not replay_lines(proc.stdout.decode())


@pytest.mark.slow
def test_an_undecided_summary_still_shows_the_replay_not_asked_for(
    billing: GitRepo, tmp_path: Path
) -> None:
    billing.write("src/billing/__init__.py", "def apply_refund(c, r):\n    return c - r\n")
    billing.commit("refactor")
    out = tmp_path / "ev"
    proc = run_patchlane(
        "gate",
        "--base",
        "main",
        "--seed",
        "1",
        "--cases",
        "20",
        "--out-dir",
        out,
        cwd=billing.path,
    )
    assert proc.returncode == 3, proc.stderr
    assert load(out, "replay-report.json")["outcome"] == "not_run"
    stdout = proc.stdout.decode()
    assert "rule 6 [replay] undecided: replay gave no evidence: replay not run" in stdout
    assert "replay: not run (--replay none)" in stdout
    assert "replay: error" not in stdout
