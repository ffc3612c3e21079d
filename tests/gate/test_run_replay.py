"""The gate's replay stage: --replay none | local | COMMAND, end to end in real repos."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from patchlane.main import main
from tests.gitrepo import CLASSIFY_MAP, GitRepo
from tests.sample import make_billing_repo

pytestmark = pytest.mark.slow  # the gate end to end, with a real replay

TEST_CHANGE = "def test_invoice_timestamp_order():\n    assert 1 + 1 == 2\n"
# The command runs in a copy of the base (no .git): `replay run` is pointed at the repository.
ONE_PROCESS = f"{shlex.quote(sys.executable)} -m patchlane --repo {{repo}} replay run --slice {{slice}} --seed 7 --out {{receipt}}"
# The patch's own test files run apart from the base's (docs/architecture.md §4).
RUN = f"{ONE_PROCESS} --base {{base}}"


@pytest.fixture
def patched(repo: GitRepo) -> GitRepo:
    make_billing_repo(repo)
    repo.branch("agent")
    repo.write("tests/test_billing.py", TEST_CHANGE)
    repo.commit("tidy the clock test")
    return repo


def gate(repo: GitRepo, out: Path, replay: str) -> int:
    argv = ["--repo", str(repo.path), "-q", "gate", "--base", "main", "--seed", "7"]
    return main([*argv, "--cases", "20", "--replay", replay, "--out-dir", str(out)])


def load(out: Path, name: str) -> Any:
    return json.loads((out / name).read_text(encoding="utf-8"))


def test_local_replay_accepts_a_good_patch(patched: GitRepo, tmp_path: Path) -> None:
    out = tmp_path / "ev"
    assert gate(patched, out, "local") == 0
    assert (
        out / "replay-slice.txt"
    ).read_text() == "tests/test_billing.py::test_invoice_timestamp_order\n"
    replay = load(out, "replay-report.json")
    assert (replay["status"], replay["mode"]) == ("pass", "local")
    assert load(out, "receipt.json")["passed_nodeids"] == [
        "tests/test_billing.py::test_invoice_timestamp_order"
    ]
    assert load(out, "verdict.json")["verdict"] == "accept_for_review"


def test_a_replay_command_gets_a_receipt_that_is_verified(patched: GitRepo, tmp_path: Path) -> None:
    # The command is how people reach their own runner; here the runner is this machine.
    out = tmp_path / "ev"
    assert gate(patched, out, RUN) == 0
    assert load(out, "replay-report.json")["outcome"] == "pass"
    merge_base = patched.git("merge-base", "main", "agent").strip()
    assert load(out, "receipt.json")["split_base"] == merge_base


def test_a_host_that_runs_the_patchs_own_tests_with_the_bases_is_undecided(
    patched: GitRepo, tmp_path: Path
) -> None:
    out = tmp_path / "ev"
    assert gate(patched, out, ONE_PROCESS) == 3
    assert "split_base" not in load(out, "receipt.json")
    (event,) = load(out, "replay-report.json")["review_events"]
    assert "tests/test_billing.py::test_invoice_timestamp_order" in event
    assert "in one pytest process with the base's tests" in event


def test_a_failing_command_is_an_unreachable_host_not_a_pass(
    patched: GitRepo, tmp_path: Path
) -> None:
    out = tmp_path / "ev"
    assert gate(patched, out, "echo queue full >&2; false {slice} {receipt}") == 3
    replay = load(out, "replay-report.json")
    assert replay["outcome"] == "unreachable"
    assert "queue full" in replay["reason"]


def test_a_command_that_leaves_no_receipt_is_undecided(patched: GitRepo, tmp_path: Path) -> None:
    out = tmp_path / "ev"
    assert gate(patched, out, "true {slice} {receipt}") == 3
    assert load(out, "replay-report.json")["reason"] == "no receipt came back"


def test_a_forged_receipt_is_refused(patched: GitRepo, tmp_path: Path) -> None:
    forged = tmp_path / "forged.json"
    forged.write_text(
        json.dumps(
            {
                "seed": 7,
                "slice_sha256": "0" * 64,
                "failed_nodeids": [],
                "skipped_by_freeze": [],
                "host_role": "free-eval",
            }
        )
    )
    out = tmp_path / "ev"
    assert gate(patched, out, f"cp {shlex.quote(str(forged))} {{receipt}} # {{slice}}") == 3
    replay = load(out, "replay-report.json")
    assert (replay["status"], replay["outcome"]) == ("error", "refused")


def test_a_change_no_test_reaches_gives_an_empty_slice_which_is_never_evidence(
    repo: GitRepo, tmp_path: Path
) -> None:
    make_billing_repo(repo)
    repo.branch("agent")
    repo.write("src/quota/__init__.py", "LIMIT = 11\n")
    repo.commit("raise the limit")
    out = tmp_path / "ev"
    assert gate(repo, out, "local") == 3
    replay = load(out, "replay-report.json")
    assert replay["outcome"] == "empty"
    assert (out / "replay-slice.txt").read_bytes() == b""


def test_a_private_slice_never_goes_to_a_command_but_runs_locally(
    repo: GitRepo, tmp_path: Path
) -> None:
    review_map = CLASSIFY_MAP.replace(
        "ignore:",
        '  replay:\n    tests: ["tests/"]\n    private: ["tests/test_billing.py"]\nignore:',
    )
    make_billing_repo(repo, review_map=review_map)
    repo.branch("agent")
    repo.write("tests/test_billing.py", TEST_CHANGE)
    repo.commit()
    out = tmp_path / "ev"
    marker = tmp_path / "uploaded"
    assert gate(repo, out, f"touch {shlex.quote(str(marker))} {{slice}} {{receipt}}") == 3
    assert load(out, "replay-report.json")["outcome"] == "private"
    assert not marker.exists()
    assert gate(repo, tmp_path / "local", "local") == 0


def test_replay_waits_for_green_local_lanes(patched: GitRepo, tmp_path: Path) -> None:
    patched.write("tests/fixtures/billing/invoice_min.json", "{}\n")
    patched.commit("silent fixture edit")
    out = tmp_path / "ev"
    assert gate(patched, out, "local") == 1
    assert load(out, "replay-report.json")["outcome"] == "skipped"
    assert not (out / "receipt.json").exists()


def test_a_replay_command_without_both_placeholders_is_exit_2(
    patched: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gate(patched, tmp_path / "ev", "upload {slice}") == 2
    assert "{receipt}" in capsys.readouterr().err


def test_a_receipt_from_a_command_that_exits_1_is_still_verified_and_rejects(
    repo: GitRepo, tmp_path: Path
) -> None:
    make_billing_repo(repo)
    repo.branch("agent")
    repo.write("tests/test_billing.py", "def test_invoice_timestamp_order():\n    assert 1 == 2\n")
    repo.commit("break the test")
    out = tmp_path / "ev"
    # `replay run` exits 1 when a node failed, and still leaves its receipt.
    assert gate(repo, out, RUN) == 1
    replay = load(out, "replay-report.json")
    assert (replay["status"], replay["failed"]) == (
        "fail",
        ["tests/test_billing.py::test_invoice_timestamp_order"],
    )
    assert load(out, "verdict.json")["reasons"][0]["rule"] == 4


BROKEN = "def test_invoice_timestamp_order():\n    assert 1 == 2\n"
# A conftest that reports every failure as a pass.
PASSING_CONFTEST = """\
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    if rep.failed:
        rep.outcome, rep.longrepr = "passed", None
    return rep
"""


@pytest.mark.parametrize(
    ("path", "content", "staged"),
    [
        ("tests/test_billing.py", TEST_CHANGE, False),  # the fix, left uncommitted
        ("tests/test_billing.py", TEST_CHANGE, True),  # staged, not committed
        ("conftest.py", PASSING_CONFTEST, False),  # untracked, beside the committed bug
    ],
)
def test_replay_run_in_a_work_tree_that_differs_from_head_is_no_evidence(
    repo: GitRepo, tmp_path: Path, path: str, content: str, staged: bool
) -> None:
    # The head is red; the work tree `replay run` tests holds a fix or a hook that hides
    # the failure. The receipt would name HEAD: the run refuses, the verdict waits.
    make_billing_repo(repo)
    repo.branch("agent")
    repo.write("tests/test_billing.py", BROKEN)
    repo.commit("break the test")
    repo.write(path, content)
    if staged:
        repo.git("add", path)
    out = tmp_path / "ev"
    assert gate(repo, out, RUN) == 3
    replay = load(out, "replay-report.json")
    assert replay["outcome"] == "unreachable"
    assert f"{path} " in replay["reason"]
    assert "commit or stash it" in replay["reason"]
    assert load(out, "verdict.json")["verdict"] == "undecided"


def test_the_readme_command_runs_beside_the_gates_own_evidence(
    patched: GitRepo, tmp_path: Path
) -> None:
    # The default evidence directory is inside the repository (and here not ignored): the
    # gate has written into it before the command runs, and `replay run` reads from it.
    out = patched.path / ".patchlane"
    command = f"{RUN} --freeze-report {{repo}}/.patchlane/freeze-report.json"
    assert gate(patched, out, command) == 0
    assert load(out, "receipt.json")["head"] == patched.head()


def test_a_head_other_than_the_checked_out_one_gets_its_receipt_refused(
    patched: GitRepo, tmp_path: Path
) -> None:
    # `replay run` tests what is checked out and names it; the gate judges --head.
    judged = patched.head()
    patched.checkout("main")
    out = tmp_path / "ev"
    argv = ["--repo", str(patched.path), "-q", "gate", "--base", "main", "--head", judged]
    argv += ["--seed", "7", "--cases", "20", "--replay", RUN, "--out-dir", str(out)]
    assert main(argv) == 3
    replay = load(out, "replay-report.json")
    assert replay["outcome"] == "refused"
    assert any("head" in r for r in replay["refusals"])


def test_a_replay_reject_shows_the_failing_assertion_and_the_note_names_the_patch(
    repo: GitRepo, tmp_path: Path
) -> None:
    from patchlane.gate.review import md_text
    from tests.gitrepo import run_patchlane

    base = make_billing_repo(repo)
    repo.branch("agent")
    repo.write(
        "tests/test_billing.py", "def test_invoice_timestamp_order():\n    assert 1 + 1 == 3\n"
    )
    head = repo.commit("break the test")
    out = tmp_path / "ev"
    proc = run_patchlane(
        "--repo", repo.path, "gate", "--base", "main", "--seed", "7", "--cases", "20",
        "--replay", "local", "--out-dir", out,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    stdout = proc.stdout.decode("utf-8")
    node = "tests/test_billing.py::test_invoice_timestamp_order"
    shown = (
        f"first: {node}: call failed: assert (1 + 1) == 3 (tests/test_billing.py:2: AssertionError)"
    )
    assert shown in stdout  # on the terminal: the rule 4 line and the replay's
    note = (out / "review.md").read_text(encoding="utf-8")
    assert md_text(shown) in note  # in the note: the rule 4 line, escaped as every value is
    assert f"- base: {base} (merge base {base})" in note
    assert f"- head: {head}" in note
    assert "  - M tests/test_billing.py" in note
    assert "- gate wall time: " in note and "- isolation: " in note
