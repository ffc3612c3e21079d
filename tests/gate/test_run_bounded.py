"""``gate --test-timeout``: real ``patchlane gate --replay local`` runs in real subprocesses on
real git repositories. A patch that makes a test loop forever (plainly, or ignoring every
signal and swallowing every exception) is ``reject`` within a bounded time, with progress
lines naming the test on stderr; a test past its bound at the base and the head alike is
the machine's (exit 2, one line); a bad ``--test-timeout`` is exit 2, one line."""

from __future__ import annotations

import time

import pytest

from tests.gitrepo import GitRepo, run_patchlane, stderr_lines

MAP = """\
version: 1
lanes:
  replay:
    tests: ["tests/"]
    paths: ["pkg/"]
    seed: 1
"""
CODE = "def step(n):\n    return n + 1\n"
TESTS = """\
from pkg.core import step


def test_one():
    assert step(1) == 2


def test_two():
    assert step(2) == 3


def test_three():
    assert step(3) == 4
"""
LOOPING = """\
def step(n):
    while n == 2:
        pass
    return n + 1
"""
# Every polite way to stop it is caught: only a kill from outside ends it.
HOSTILE = """\
import signal


def step(n):
    if n == 2:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM):
            signal.signal(sig, signal.SIG_IGN)
        while True:
            try:
                while True:
                    pass
            except (KeyboardInterrupt, SystemExit, BaseException):
                continue
    return n + 1
"""
NODE = "tests/test_core.py::test_two"


def _project(repo: GitRepo, tests: str = TESTS) -> GitRepo:
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/core.py", CODE)
    repo.write("tests/test_core.py", tests)
    repo.write("pytest.ini", "[pytest]\n")
    repo.write("review-map.yml", MAP)
    repo.write(".gitignore", ".patchlane/\n")
    repo.commit("base")
    repo.branch("agent")
    return repo


def _gate(repo: GitRepo, *extra: str) -> tuple[int, list[str], float]:
    begun = time.monotonic()
    proc = run_patchlane(
        "--repo", repo.path, "gate", "--base", "main", "--replay", "local", *extra
    )  # fmt: skip
    return proc.returncode, stderr_lines(proc), time.monotonic() - begun


@pytest.mark.slow
def test_a_patch_whose_test_loops_forever_is_rejected_with_the_test_named_while_it_runs(
    repo: GitRepo,
) -> None:
    _project(repo)
    repo.write("pkg/core.py", LOOPING)
    repo.commit("loop")
    code, lines, seconds = _gate(repo, "--test-timeout", "12")
    assert code == 1, lines  # reject
    assert seconds < 120  # the bound, the base's run of the node, start-up: not 1,800 s
    # Off a terminal too: a line at least every 10 s names the running test and its time.
    assert any(f"; {NODE} running for 1" in line for line in lines), lines
    out = (repo.path / ".patchlane" / "review.md").read_text(encoding="utf-8")
    assert "timed out after 12 s" in out


@pytest.mark.slow
def test_a_loop_that_ignores_signals_and_swallows_exceptions_is_rejected_all_the_same(
    repo: GitRepo,
) -> None:
    _project(repo)
    repo.write("pkg/core.py", HOSTILE)
    repo.commit("hostile loop")
    code, lines, seconds = _gate(repo, "--test-timeout", "5")
    assert code == 1, lines
    assert seconds < 120


@pytest.mark.slow
def test_a_test_past_its_bound_at_the_base_as_at_the_head_is_the_machine_s_exit_2(
    repo: GitRepo,
) -> None:
    slow = TESTS.replace(
        "def test_two():\n", "def test_two():\n    import time\n\n    time.sleep(60)\n"
    )
    _project(repo, slow)
    repo.write("pkg/core.py", "def step(n):\n    return 1 + n\n")  # honest, and as slow
    repo.commit("same")
    code, lines, seconds = _gate(repo, "-q", "--test-timeout", "3")
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith("patchlane: error: "), lines
    assert NODE in lines[0] and "--test-timeout" in lines[0]
    assert seconds < 60  # twice the bound and the start-ups, not the test's 60 s twice


@pytest.mark.slow
@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "ten"])
def test_a_bad_test_timeout_is_exit_2_one_line(repo: GitRepo, value: str) -> None:
    _project(repo)
    replay_run = ("replay", "run", "--slice", "s", "--seed", "1", "--out", "r.json")
    for command in (("gate", "--base", "main"), replay_run):
        proc = run_patchlane("--repo", repo.path, *command, f"--test-timeout={value}")
        lines = stderr_lines(proc)
        assert proc.returncode == 2, lines
        assert len(lines) == 1 and "--test-timeout" in lines[0], lines


@pytest.mark.slow
def test_after_a_test_ran_past_its_bound_the_patch_s_own_tests_are_not_run_nor_judged(
    repo: GitRepo,
) -> None:
    import json

    _project(repo)
    repo.write("pkg/core.py", LOOPING)
    repo.write("tests/test_added.py", "def test_added():\n    assert True\n")
    repo.commit("loop, and a test of its own")
    code, lines, seconds = _gate(repo, "--test-timeout", "5")
    assert code == 1, lines
    assert seconds < 60  # one bound at the head (not one more for the patch's own tests)
    evidence = repo.path / ".patchlane"
    receipt = json.loads((evidence / "receipt.json").read_text(encoding="utf-8"))
    # Covered by the receipt (never missing: a refusal), failed (never a pass) ...
    assert "tests/test_added.py::test_added" in receipt["failed_nodeids"]
    # ... and left out of the evidence against the patch: the looping test is.
    report = json.loads((evidence / "replay-report.json").read_text(encoding="utf-8"))
    assert report["failed"] == [NODE]
    assert any("not judged" in e for e in report["review_events"])
