"""``patchlane gate --patch FILE|-``: a patch file is gated as a commit on the base, in a
real subprocess, and the user's work tree, index and branches are left as they were."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitrepo import GitRepo, run_patchlane, stderr_lines
from tests.sample import FIXTURE_MAP, FIXTURES, LOCK, lock_text

EDITED = '{"charge_cents": 1200, "refund_cents": 1300}\n'
MIN = "tests/fixtures/billing/invoice_min.json"


def state(repo: GitRepo) -> tuple[str, str, str, str]:
    """What the user owns: HEAD, the refs, the index entries and the work tree's status."""
    return (
        repo.git("rev-parse", "HEAD"),
        repo.git("for-each-ref", "--format=%(refname) %(objectname)"),
        repo.git("ls-files", "--stage"),
        repo.git("status", "--porcelain", "--untracked-files=all"),
    )


def gate_args(repo: GitRepo, out: Path, patch: str) -> list[str]:
    return [
        "--repo", str(repo.path), "gate", "--base", "main", "--patch", patch,
        "--out-dir", str(out),
    ]  # fmt: skip


def make_patch(billing: GitRepo, *kinds: str) -> bytes:
    """Commit the agent's edits on ``agent`` and return them as ``git diff`` or
    ``git format-patch`` output; ``main`` is checked out again afterwards."""
    billing.write(MIN, EDITED)
    billing.commit("tidy fixture")
    billing.write(LOCK, lock_text({**FIXTURES, MIN: EDITED}, reason="refund over charge case"))
    billing.commit("relock")
    text = (
        billing.git("format-patch", "--stdout", "main..agent")
        if "mbox" in kinds
        else billing.git("diff", "main", "agent~1")
    )
    billing.checkout("main")
    billing.git("branch", "-D", "agent")
    return text.encode()


@pytest.mark.review_map(FIXTURE_MAP)
def test_a_diff_file_is_gated_as_a_commit_and_named_in_the_evidence(
    billing: GitRepo, tmp_path: Path
) -> None:
    (tmp_path / "agent.diff").write_bytes(make_patch(billing))
    before = state(billing)
    out = tmp_path / "ev"
    proc = run_patchlane(*gate_args(billing, out, "agent.diff"), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert state(billing) == before
    classify = json.loads((out / "classify.json").read_text("utf-8"))
    head = classify["head"]
    assert classify["applied_from"] == "agent.diff"
    assert classify["merge_base"] == billing.git("rev-parse", "main").strip()
    assert [f["path"] for f in classify["files"]] == [MIN]
    assert f"head: {head} (applied from agent.diff)" in proc.stdout.decode()
    assert f"> head: {head} (applied from agent.diff)" in (out / "review.md").read_text("utf-8")
    assert json.loads((out / "verdict.json").read_text("utf-8"))["verdict"] == "reject"


@pytest.mark.review_map(FIXTURE_MAP)
def test_a_format_patch_of_two_commits_is_gated_with_both_applied(
    billing: GitRepo, tmp_path: Path
) -> None:
    # Alone, the first commit changes a fixture without its lock (reject); the second
    # relocks it with a reason, so the series as a whole is no longer red.
    (tmp_path / "agent.mbox").write_bytes(make_patch(billing, "mbox"))
    out = tmp_path / "ev"
    proc = run_patchlane(*gate_args(billing, out, "agent.mbox"), "--json", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    shown = json.loads(proc.stdout)
    assert (shown["verdict"], shown["applied_from"]) == ("undecided", "agent.mbox")
    head = shown["head"]
    subjects = billing.git("log", "--format=%s", f"main..{head}").splitlines()
    assert subjects == ["relock", "tidy fixture"]
    fixture = json.loads((out / "fixture-report.json").read_text("utf-8"))
    assert fixture["status"] == "pass"


@pytest.mark.review_map(FIXTURE_MAP)
def test_standard_input_is_the_patch_for_a_dash(billing: GitRepo, tmp_path: Path) -> None:
    patch = make_patch(billing)
    out = tmp_path / "ev"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.run(
        [sys.executable, "-m", "patchlane", *gate_args(billing, out, "-")],
        input=patch,
        capture_output=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert json.loads((out / "classify.json").read_text("utf-8"))["applied_from"] == "stdin"


@pytest.mark.review_map(FIXTURE_MAP)
def test_a_patch_that_does_not_apply_is_exit_2_naming_the_hunk(
    billing: GitRepo, tmp_path: Path
) -> None:
    (tmp_path / "agent.diff").write_bytes(make_patch(billing))
    billing.write(MIN, '{"charge_cents": 1}\n')
    billing.commit("main moved on")
    billing.write("docs/billing.md", "# uncommitted\n")
    before = state(billing)
    out = tmp_path / "ev"
    proc = run_patchlane(*gate_args(billing, out, "agent.diff"), cwd=tmp_path)
    assert proc.returncode == 2
    assert stderr_lines(proc) == [
        f"patchlane: error: agent.diff: does not apply: {MIN} hunk @@ -1 +1 @@ "
        "(patch does not apply)"
    ]
    assert state(billing) == before
    assert not (out / "verdict.json").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--head", "HEAD"],
            "patchlane: error: --patch with --head: the patch applied to --base is the head; "
            "give one of them",
        ),
        ([], "patchlane: error: --patch missing.diff: no such file"),
    ],
)
def test_bad_patch_options_are_exit_2(
    billing: GitRepo, tmp_path: Path, extra: list[str], message: str
) -> None:
    proc = run_patchlane(*gate_args(billing, tmp_path / "ev", "missing.diff"), *extra)
    assert proc.returncode == 2
    assert stderr_lines(proc) == [message]


def test_an_empty_patch_is_exit_2(billing: GitRepo, tmp_path: Path) -> None:
    (tmp_path / "empty.diff").write_bytes(b"")
    proc = run_patchlane(*gate_args(billing, tmp_path / "ev", "empty.diff"), cwd=tmp_path)
    assert proc.returncode == 2
    assert stderr_lines(proc) == ["patchlane: error: empty.diff: empty patch: nothing to apply"]


@pytest.mark.review_map(FIXTURE_MAP)
def test_without_base_a_patch_is_applied_to_the_default_branch_not_the_one_you_are_on(
    billing: GitRepo, tmp_path: Path
) -> None:
    # Hostile: the branch checked out may be the agent's own (a conftest that turns
    # failures into passes, a map of its own); the default base is the trusted branch.
    (tmp_path / "agent.diff").write_bytes(make_patch(billing))
    billing.branch("work")
    billing.write("docs/billing.md", "# notes\n")
    billing.commit("work moves on")
    out = tmp_path / "ev"
    argv = ["-v", "gate", "--patch", os.fspath(tmp_path / "agent.diff"), "--out-dir", out]
    proc = run_patchlane(*argv, cwd=billing.path)
    assert proc.returncode == 1, proc.stderr
    classify = json.loads((out / "classify.json").read_text("utf-8"))
    assert classify["merge_base"] == billing.git("rev-parse", "main").strip()
    assert "base: main (the default branch; --base REF for another)" in proc.stderr.decode()


@pytest.mark.review_map(FIXTURE_MAP)
def test_a_patch_that_does_not_apply_on_a_default_base_names_that_base(
    billing: GitRepo, tmp_path: Path
) -> None:
    (tmp_path / "agent.diff").write_bytes(make_patch(billing))
    billing.write(MIN, '{"charge_cents": 1}\n')
    billing.commit("main moved on")
    billing.git("checkout", "-q", "--detach")
    proc = run_patchlane("gate", "--patch", tmp_path / "agent.diff", cwd=billing.path)
    assert proc.returncode == 2
    [line] = stderr_lines(proc)
    assert line.startswith(f"patchlane: error: {tmp_path / 'agent.diff'}: does not apply: ")
    assert line.endswith("(base main: the default branch; --base REF for another)")
