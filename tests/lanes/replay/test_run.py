"""``run_slice``: real pytest runs of real test files in temp git repositories (no mocks)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from patchlane.lanes.replay import slicefile
from patchlane.lanes.replay.run import RunResult, classify, run_slice
from tests.gitrepo import GitRepo
from tests.lanes.replay.test_verify import freeze_record, freeze_report

TEST_FILE = """\
import os

import pytest


def test_pass():
    assert os.environ["PATCHLANE_SEED"] == "4242"
    assert os.environ["PYTHONHASHSEED"] == "4242"


def test_fail():
    assert False


@pytest.fixture
def broken():
    raise RuntimeError("fixture error")


def test_error(broken):
    pass


@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown error")


def test_teardown_error(bad_teardown):
    pass


@pytest.mark.skip(reason="its own reason")
def test_own_skip():
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False


def test_frozen():
    assert False, "flaky"


def test_frozen_not_in_play():
    assert False, "flaky too"


@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert n == 1
"""

T = "tests/test_x.py::"
PASS, FAIL, ERROR, TEARDOWN = (
    T + "test_pass",
    T + "test_fail",
    T + "test_error",
    T + "test_teardown_error",
)
OWN_SKIP, XFAIL, FROZEN, NOT_IN_PLAY = (
    T + "test_own_skip",
    T + "test_xfail",
    T + "test_frozen",
    T + "test_frozen_not_in_play",
)
P1, P2 = T + "test_param[1]", T + "test_param[2]"
MISSING, NO_FILE = T + "test_missing", "tests/test_nothere.py::test_a"
BROKEN = "tests/test_broken.py::test_a"
DESELECTED = "tests/test_y.py::test_deselected"
KEPT = "tests/test_y.py::test_kept"

CONFTEST = """\
def pytest_collection_modifyitems(config, items):
    keep = [i for i in items if "deselected" not in i.nodeid]
    config.hook.pytest_deselected(items=[i for i in items if i not in keep])
    items[:] = keep
"""


def make_repo(path: Path) -> GitRepo:
    repo = GitRepo(path)
    repo.write("tests/test_x.py", TEST_FILE)
    repo.write("tests/test_broken.py", "import not_a_module_anywhere\n\ndef test_a():\n    pass\n")
    repo.write("tests/conftest.py", CONFTEST)
    repo.write(
        "tests/test_y.py", "def test_deselected():\n    pass\n\ndef test_kept():\n    pass\n"
    )
    repo.commit("tests")
    return repo


def run(
    repo: GitRepo, nodeids: list[str], freeze: Path | None = None, timeout_s: float = 120.0
) -> RunResult:
    data = slicefile.render(nodeids)
    return run_slice(
        repo.path,
        slicefile.parse(data, "slice"),
        slicefile.sha256(data),
        seed=4242,
        head=repo.head(),
        host_role="test-host",
        freeze_report=freeze,
        timeout_s=timeout_s,
    )


ALL = [PASS, FAIL, ERROR, TEARDOWN, OWN_SKIP, XFAIL, FROZEN, NOT_IN_PLAY, P1, P2, MISSING, NO_FILE]
ALL += [BROKEN, DESELECTED, KEPT]


@pytest.fixture(scope="module")
def big_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[GitRepo, RunResult]:
    """One real run of every kind of node, with a freeze report (shared: pytest is slow)."""
    root = tmp_path_factory.mktemp("run")
    repo = make_repo(root / "repo")
    report = root / "freeze-report.json"
    report.write_text(
        json.dumps(
            freeze_report(freeze_record(FROZEN), freeze_record(NOT_IN_PLAY, "f2", in_play=False))
        )
    )
    return repo, run(repo, ALL, report)


def test_only_a_pass_is_passed(big_run: tuple[GitRepo, RunResult]) -> None:
    _, result = big_run
    assert result.receipt.passed_nodeids == tuple(sorted([PASS, P1, KEPT]))


@pytest.mark.parametrize(
    "nodeid",
    [FAIL, ERROR, TEARDOWN, OWN_SKIP, XFAIL, NOT_IN_PLAY, P2, MISSING, NO_FILE, BROKEN, DESELECTED],
)
def test_everything_else_is_failed(big_run: tuple[GitRepo, RunResult], nodeid: str) -> None:
    # fail, fixture error, teardown error, its own skip mark, xfail, a freeze not in play,
    # a parametrised sibling, not collected, no such file, a file that does not import, and
    # a node a conftest deselected.
    _, result = big_run
    assert nodeid in result.receipt.failed_nodeids


def test_the_in_play_passing_freeze_is_skipped_by_freeze(
    big_run: tuple[GitRepo, RunResult],
) -> None:
    _, result = big_run
    assert result.receipt.skipped_by_freeze == (FROZEN,)


def test_the_receipt_covers_the_slice_and_names_the_run(big_run: tuple[GitRepo, RunResult]) -> None:
    repo, result = big_run
    r = result.receipt
    assert sorted([*(r.passed_nodeids or ()), *r.failed_nodeids, *r.skipped_by_freeze]) == sorted(
        ALL
    )
    assert r.slice_sha256 == slicefile.sha256(slicefile.render(ALL))
    assert (r.seed, r.head, r.host_role) == (4242, repo.head(), "test-host")
    assert r.started is not None and r.finished is not None and r.started <= r.finished
    assert r.patchlane_version and r.signature is None
    assert result.returncode == 1 and not result.timed_out


def test_without_a_freeze_report_the_frozen_node_fails(repo: GitRepo) -> None:
    make_repo(repo.path)
    result = run(repo, [PASS, FROZEN])
    assert result.receipt.failed_nodeids == (FROZEN,)
    assert result.receipt.skipped_by_freeze == ()


def test_the_timeout_kills_the_process_group_and_fails_every_node(
    repo: GitRepo, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    repo.write(
        "tests/test_slow.py",
        "import os, subprocess, time\n\n"
        "def test_fast():\n    pass\n\n"
        "def test_slow():\n"
        "    child = subprocess.Popen(['sleep', '300'])\n"
        f"    open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "    time.sleep(300)\n",
    )
    repo.commit("slow")
    start = time.monotonic()
    result = run(
        repo, ["tests/test_slow.py::test_fast", "tests/test_slow.py::test_slow"], timeout_s=8
    )
    assert time.monotonic() - start < 60
    assert result.timed_out and result.returncode is None
    assert result.receipt.passed_nodeids == ()
    assert len(result.receipt.failed_nodeids) == 2
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for a reaper does not count)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state in ("Z", "X"):
            return False
        time.sleep(0.1)
    return True


def test_pythonhashseed_and_patchlane_seed_reach_the_tests(repo: GitRepo) -> None:
    make_repo(repo.path)
    assert run(repo, [PASS]).receipt.passed_nodeids == (PASS,)


def test_pytest_addopts_from_the_host_cannot_deselect(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_repo(repo.path)
    monkeypatch.setenv("PYTEST_ADDOPTS", "-k nothing_matches")
    assert run(repo, [PASS]).receipt.passed_nodeids == (PASS,)


def test_classify_is_pure() -> None:
    outcomes = {"a::p": "passed", "a::s": "skipped", "a::f": "skipped", "a::x": "xpassed"}
    assert classify(["a::f", "a::m", "a::p", "a::s", "a::x"], outcomes, frozenset({"a::f"})) == (
        ("a::p",),
        ("a::m", "a::s", "a::x"),
        ("a::f",),
    )


def test_an_empty_slice_is_not_run() -> None:
    with pytest.raises(ValueError, match="empty"):
        run_slice(
            Path(os.devnull),
            (),
            slicefile.sha256(b""),
            seed=1,
            head=None,
            host_role="x",
            freeze_report=None,
            timeout_s=1,
        )


# --- the plugin's --patchlane-results option -----------------------------------------------------


def results_of(repo: GitRepo, tmp_path: Path, *args: str) -> dict[str, str]:
    """Run pytest on the repo's test_x.py with ``--patchlane-results``; return the file's map."""
    out = tmp_path / "results.json"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--rootdir={repo.path}",
         f"--patchlane-results={out}", "tests/test_x.py", *args],
        cwd=repo.path, capture_output=True, check=False,
    )  # fmt: skip
    value: dict[str, str] = json.loads(out.read_text())
    assert list(value) == sorted(value)  # sorted: the same run gives the same bytes
    return value


def test_the_results_option_records_one_outcome_per_node(repo: GitRepo, tmp_path: Path) -> None:
    make_repo(repo.path)
    assert results_of(repo, tmp_path) == {
        PASS: "failed",  # PATCHLANE_SEED is not set outside a replay run
        FAIL: "failed",
        ERROR: "error",
        TEARDOWN: "error",
        OWN_SKIP: "skipped",
        XFAIL: "xfailed",
        FROZEN: "failed",
        NOT_IN_PLAY: "failed",
        P1: "passed",
        P2: "failed",
    }


def test_nodes_a_stopped_run_never_reached_are_not_run(repo: GitRepo, tmp_path: Path) -> None:
    make_repo(repo.path)
    outcomes = results_of(repo, tmp_path, "-x")
    assert outcomes[PASS] == "failed"
    assert {outcomes[n] for n in (FAIL, ERROR, P1, P2)} == {"not_run"}


def test_a_conftest_that_breaks_pytest_fails_every_node(repo: GitRepo) -> None:
    make_repo(repo.path)
    repo.write("tests/conftest.py", "raise RuntimeError('broken harness')\n")
    repo.commit("break the harness")
    result = run(repo, [PASS, P1])
    assert result.receipt.passed_nodeids == ()
    assert result.receipt.failed_nodeids == tuple(sorted([PASS, P1]))
    assert result.returncode not in (0, 1, 5, None)
    assert b"broken harness" in result.output_tail
