"""Progress on stderr during long steps, on a terminal or not: a step that began inside the
quiet second is said when the second ends, a long one says how long it has run, and ``-q``
silences all of it. The gate, ``property`` and ``replay select`` keep the same clock."""

from __future__ import annotations

import re
import time

import pytest

from patchlane.infra.steps import Steps
from patchlane.infra.ui import Output
from tests.gitrepo import GitRepo, run_patchlane, stderr_lines

SLOW_PROPS = """\
import time

from pkg.core import add


def prop_add_commutes(seed, n=200):
    time.sleep(1.5)  # past the quiet second on any machine, with the child's start-up
    assert add(1, 2) == add(2, 1)
"""
MAP = """\
version: 1
lanes:
  property:
    paths: ["pkg/"]
    module: "checks.props"
  replay:
    tests: ["tests/"]
"""
TIMED = re.compile(r"^patchlane: property lane: \d+\.\d\d s$")


@pytest.mark.slow
def test_a_step_begun_in_the_quiet_window_is_said_when_it_closes_then_at_each_beat(
    capsys: pytest.CaptureFixture[str],
) -> None:
    steps = Steps(Output(), quiet_for_s=0.2, heartbeat_s=0.2)
    with steps.step("property lane"):
        time.sleep(0.5)  # begun at 0 s: said at 0.2 s, a beat at 0.4 s, ends at 0.5 s
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "patchlane: property lane ..."
    assert lines[1:-1]
    assert all(line.startswith("patchlane: property lane: running for ") for line in lines[1:-1])
    assert TIMED.match(lines[-1])
    time.sleep(0.3)
    assert capsys.readouterr().err == ""  # no beat after the step ended


def test_a_quiet_clock_starts_no_watch(capsys: pytest.CaptureFixture[str]) -> None:
    steps = Steps(Output(quiet=True), quiet_for_s=0.0, heartbeat_s=0.01)
    with steps.step("replay: run"):
        time.sleep(0.05)
    assert capsys.readouterr().err == ""


@pytest.fixture
def slow(repo: GitRepo) -> GitRepo:
    """A project whose property runs take 1.5 s each (the gate runs base and head)."""
    repo.write("pkg/__init__.py", "")
    repo.write("pkg/core.py", "def add(a, b):\n    return a + b\n")
    repo.write("tests/test_core.py", "from pkg.core import add\n\n\ndef test_add():\n"
               "    assert add(1, 2) == 3\n")  # fmt: skip
    repo.write("checks/__init__.py", "")
    repo.write("checks/props.py", SLOW_PROPS)
    repo.write("review-map.yml", MAP)
    repo.write(".gitignore", ".patchlane/\n")
    repo.commit("base")
    repo.branch("agent")
    repo.write("pkg/core.py", "def add(a, b):\n    return b + a\n")
    repo.commit("patch")
    return repo


GATE = ("gate", "--base", "main", "--seed", "1", "--cases", "5", "--mutants", "0",
        "--property-cache", "off")  # fmt: skip


@pytest.mark.slow
def test_a_slow_gate_off_a_terminal_says_each_step_with_its_time(slow: GitRepo) -> None:
    proc = run_patchlane(*GATE, cwd=slow.path)  # stderr is a pipe, not a terminal
    assert proc.returncode == 3, proc.stderr  # no replay: undecided
    lines = stderr_lines(proc)
    assert "patchlane: property lane ..." in lines  # begun before the first second ended
    assert any(TIMED.match(line) for line in lines), lines
    assert any(re.match(r"^patchlane: freeze lane: \d+\.\d\d s$", line) for line in lines)


@pytest.mark.slow
def test_quiet_gate_says_nothing_on_stderr(slow: GitRepo) -> None:
    proc = run_patchlane("-q", *GATE, cwd=slow.path)
    assert proc.returncode == 3
    assert proc.stderr == b""


@pytest.mark.slow
def test_property_command_says_its_step_off_a_terminal(slow: GitRepo) -> None:
    args = ("property", "--base", "main", "--seed", "1", "--cases", "5", "--mutants", "0",
            "--property-cache", "off")  # fmt: skip
    proc = run_patchlane(*args, cwd=slow.path)
    assert proc.returncode == 0, proc.stderr
    lines = stderr_lines(proc)
    assert lines[0] == "patchlane: property lane ..."
    assert TIMED.match(lines[-1]), lines
    assert stderr_lines(run_patchlane("-q", *args, cwd=slow.path)) == []
