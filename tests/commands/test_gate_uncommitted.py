"""The gate judges commits: uncommitted changes in the work tree are named, never silently
left out, and the command it prints to gate them runs as printed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.commands.test_gate_patch import MIN, state
from tests.gitrepo import GitRepo, run_patchlane, stderr_lines
from tests.sample import FIXTURE_MAP

EDITED = '{"charge_cents": 1}\n'


def gate(repo: GitRepo, out: Path, *extra: str) -> subprocess.CompletedProcess[bytes]:
    return run_patchlane(
        "gate", "--base", "main", "--seed", "7", "--out-dir", out, *extra, cwd=repo.path
    )


def notes(proc: subprocess.CompletedProcess[bytes]) -> list[str]:
    """The stderr lines about uncommitted changes (progress lines aside)."""
    return [line for line in stderr_lines(proc) if "judges commits" in line]


@pytest.mark.slow
@pytest.mark.review_map(FIXTURE_MAP)
def test_nothing_committed_is_exit_2_with_a_command_that_gates_the_edits(
    billing: GitRepo, tmp_path: Path
) -> None:
    billing.write(MIN, EDITED)
    billing.write("tests/fixtures/billing/new.json", "{}\n")
    billing.write("notes.txt", "not under any lane\n")
    out = tmp_path / "ev"
    proc = gate(billing, out)
    assert proc.returncode == 2
    [line] = stderr_lines(proc)
    head = billing.head()[:12]
    command = (
        f"git diff --binary main | patchlane gate --base main --patch - --seed 7 --out-dir {out}"
    )
    assert line == (
        f"patchlane: error: HEAD ({head}) adds no commit to main: the gate judges commits, "
        f"and your changes are not committed (M {MIN}, ?? tests/fixtures/billing/new.json); "
        f"commit them, or gate them as a patch: {command} "
        "(git add -N the untracked files first, so that git diff shows them)"
    )
    assert not (out / "verdict.json").exists()
    # As printed, the command gates the edits: the changed fixture and the new file.
    billing.git("add", "-N", "tests/fixtures/billing/new.json")
    before = state(billing)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    run = subprocess.run(
        ["sh", "-c", command], cwd=billing.path, env=env, capture_output=True, check=False
    )
    assert run.returncode == 1, run.stderr
    fixture = json.loads((out / "fixture-report.json").read_text("utf-8"))
    assert (fixture["changed"], fixture["extra"]) == ([MIN], ["tests/fixtures/billing/new.json"])
    assert state(billing) == before


@pytest.mark.review_map(FIXTURE_MAP)
def test_an_untracked_file_no_lane_covers_changes_nothing(billing: GitRepo, tmp_path: Path) -> None:
    billing.write("notes.txt", "scratch\n")
    proc = gate(billing, tmp_path / "ev")
    assert proc.returncode == 3
    assert notes(proc) == []
    verdict = json.loads((tmp_path / "ev" / "verdict.json").read_text("utf-8"))
    assert "the patch changes no file" in json.dumps(verdict["reasons"])


@pytest.mark.slow
@pytest.mark.review_map(FIXTURE_MAP)
def test_commits_are_judged_and_the_edits_left_out_are_named(
    billing: GitRepo, tmp_path: Path
) -> None:
    billing.write("docs/billing.md", "# Billing, committed\n")
    billing.commit("docs")
    billing.write(MIN, EDITED)
    proc = gate(billing, tmp_path / "ev")
    # The commit (docs only) is judged; the fixture edit is not, and stderr says so.
    assert proc.returncode == 3
    head = billing.head()[:12]
    assert notes(proc) == [
        f"patchlane: note: the gate judges commits: HEAD ({head}) is judged without the work "
        f"tree's uncommitted changes (M {MIN}); commit them, or gate them as a patch: "
        "git diff --binary main | patchlane gate --base main --patch - --seed 7 "
        f"--out-dir {tmp_path / 'ev'}"
    ]
    assert notes(gate(billing, tmp_path / "ev", "-q")) == []
    # Naming another commit than HEAD leaves the work tree out of it.
    other = gate(billing, tmp_path / "ev", "--head", "main")
    assert notes(other) == []


def test_the_printed_command_keeps_repo_and_map_options(billing: GitRepo, tmp_path: Path) -> None:
    billing.write("src/billing/__init__.py", "# edited\n")
    proc = run_patchlane(
        "--repo", billing.path, "--map", "review-map.yml", "gate", "--base", "main",
        "--replay", "local", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2
    [line] = stderr_lines(proc)
    assert line.endswith(
        f"gate them as a patch: git -C {billing.path} diff --binary main | patchlane --repo "
        f"{billing.path} --map review-map.yml gate --base main --patch - --replay local"
    )


@pytest.mark.slow
@pytest.mark.review_map(FIXTURE_MAP)
def test_no_commit_and_no_change_says_there_is_no_patch(billing: GitRepo, tmp_path: Path) -> None:
    # The verdict stays undecided ("the patch changes no file"); the note says why.
    billing.checkout("main")
    proc = gate(billing, tmp_path / "ev")
    assert proc.returncode == 3
    said = [line for line in stderr_lines(proc) if "no patch to judge" in line]
    assert len(said) == 1 and "--patch FILE" in said[0], stderr_lines(proc)
    assert run_patchlane("-q", "gate", "--base", "main", "--seed", "7", "--out-dir",
                         tmp_path / "q", cwd=billing.path).stderr == b""  # fmt: skip
