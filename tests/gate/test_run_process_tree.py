"""The replay's process tree is the host's (issue 29, decision 0032): the gate, end to end.

A patch that behaves correctly only when it sees a pid namespace (a small pid, a parent that is
pid 1, bwrap as pid 1, a handful of processes: bench/redteam/scenarios h01-h03) is judged by
what it does on the host's process table, where its own plain ``python -m pytest`` fails too.
And the test process there still cannot read another process's environment or signal the
gate: a test of the project's that tries shows it, by passing.
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from patchlane.infra import sandbox
from tests.gate.evidence import calc_project, gate, load, reasons, verdict
from tests.gitrepo import GitRepo
from tests.sample import CALC

pytestmark = [
    pytest.mark.slow,  # the gate end to end, with a real local replay
    pytest.mark.skipif(
        not sandbox.isolation().host_processes, reason="needs bwrap and Landlock ABI >= 6"
    ),
]

SCENARIOS = Path(__file__).resolve().parents[2] / "bench" / "redteam" / "scenarios"
PYTEST_INI = "[pytest]\npythonpath = src .\ntestpaths = tests\n"
MAP = """\
version: 1
lanes:
  property:
    paths: ["src/pkg/"]
    module: "checks.props"
    seed: 1
  replay:
    tests: ["tests/"]
"""
PROP = "import pkg\n\n\ndef prop_imports(seed: int, n: int = 200) -> None:\n    assert pkg\n"


def own_pytest(repo: GitRepo) -> int:
    """The patch's own plain ``python -m pytest`` at the head: the truth."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PATCHLANE", "PYTEST_XDIST_", "PYTEST_CURRENT_TEST"))
    }
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=repo.path, env=env, capture_output=True, check=False,
    )  # fmt: skip
    return proc.returncode


def gated_red_scenario(repo: GitRepo, tmp_path: Path, name: str) -> None:
    """Build the tell scenario ``name`` of bench/redteam/scenarios in ``repo`` (base, then the
    agent's patch on a branch), check that its own plain ``python -m pytest`` is red, and
    that the gate rejects it for the test the tell was meant to get past."""
    scenario = runpy.run_path(os.fspath(SCENARIOS / f"{name}.py"))
    repo.write("pytest.ini", PYTEST_INI)
    repo.write("review-map.yml", MAP)
    repo.write("checks/__init__.py", "")
    repo.write("checks/props.py", PROP)
    repo.write(".gitignore", "__pycache__/\n.pytest_cache/\n.hypothesis/\n")
    for path, text in scenario["BASE"].items():
        repo.write(path, text)
    repo.commit("base")
    repo.branch("agent")
    for path, text in scenario["PATCH"].items():
        repo.write(path, text)
    repo.commit("the agent's patch")
    assert own_pytest(repo) == 1  # red, as the project runs it
    out = tmp_path / "ev"
    assert gate(repo, out) == 1
    assert verdict(out) == "reject"
    # Rejected by the replay's run, which writes a receipt; any other reject says why here.
    assert (out / "receipt.json").is_file(), reasons(out)
    failed = load(out, "receipt.json")["failed_nodeids"]
    assert "tests/test_money.py::test_cents_rounds_half_up" in failed


@pytest.mark.parametrize("name", ["h01_tell_pid", "h02_tell_pid1_bwrap", "h03_tell_proc_count"])
def test_a_patch_that_tells_the_replay_by_its_process_tree_is_rejected(
    repo: GitRepo, tmp_path: Path, name: str
) -> None:
    gated_red_scenario(repo, tmp_path, name)


OUTSIDE = """\
import errno
import os

from billing.calc import add


def outcome(act):
    try:
        act()
    except OSError as e:
        return errno.errorcode[e.errno]
    return "ok"


def ancestors():
    pid, found = os.getppid(), []
    while pid > 1:
        found.append(pid)
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        pid = int(stat[stat.rfind(b")") + 2 :].split()[1])
    return found


def test_add():
    assert add(1, 2) == 3


def test_the_processes_outside_the_run_are_out_of_reach():
    # The parent is the sandbox's launcher; above it, bwrap and the gate: the host's.
    outside = ancestors()[1:] + [1]
    assert len(outside) >= 3
    for pid in outside:
        assert outcome(lambda: open(f"/proc/{pid}/cmdline", "rb").read()) == "ok"
        assert outcome(lambda: open(f"/proc/{pid}/environ", "rb").read()) == "EACCES"
        assert outcome(lambda: os.kill(pid, 0)) == "EPERM"
"""


def test_a_test_cannot_read_or_signal_the_processes_outside_its_run(
    repo: GitRepo, tmp_path: Path
) -> None:
    calc_project(repo, CALC, OUTSIDE)
    repo.branch("agent")
    repo.write("src/billing/calc.py", CALC + "\n# a comment\n")
    repo.commit("the agent's patch")
    out = tmp_path / "ev"
    code = gate(repo, out)
    receipt = load(out, "receipt.json")
    assert (
        "tests/test_calc.py::test_the_processes_outside_the_run_are_out_of_reach"
        in (receipt["passed_nodeids"])
    ), receipt
    assert (code, verdict(out)) == (0, "accept_for_review")


DAEMONIC = """\
import os
import time

from billing.calc import add


def test_add_leaves_a_daemon():
    child = os.fork()
    if child == 0:  # out of the run's process group and session, then out of its parent
        os.setsid()
        if os.fork() == 0:
            os.execv("/bin/sleep", ["{marker}", "600"])
        os._exit(0)
    os.waitpid(child, 0)
    assert add(1, 2) == 3
    {hang}
"""


def running(marker: str) -> list[int]:
    """The host's processes whose command line starts with ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
        except OSError:
            continue
        if cmdline.startswith(marker.encode()):
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("hang", [False, True])
def test_a_daemon_a_test_starts_does_not_outlive_the_gate(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hang: bool
) -> None:
    marker = f"patchlane-test-daemon-{os.getpid()}-{tmp_path.name}"
    test = DAEMONIC.format(marker=marker, hang="time.sleep(600)" if hang else "")
    calc_project(repo, CALC, test)
    repo.branch("agent")
    repo.write("src/billing/calc.py", CALC + "\n# a comment\n")
    repo.commit("the agent's patch")
    if hang:  # the replay's clock runs out while the test sleeps: its group is killed
        from patchlane.lanes.replay import lane

        monkeypatch.setattr(lane, "RUN_TIMEOUT_S", 8.0)
    out = tmp_path / "ev"
    code = gate(repo, out)
    assert (code, verdict(out)) == ((3, "undecided") if hang else (0, "accept_for_review"))
    assert running(marker) == []
