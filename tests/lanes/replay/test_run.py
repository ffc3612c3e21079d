"""``run_slice``: real pytest runs of real test files in temp git repositories (no mocks)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from patchlane.formats import slicefile
from patchlane.lanes.replay.fold import fold
from patchlane.lanes.replay.hostrun import HostRun, run_slice
from patchlane.lanes.replay.results import FAILED, PASSED, SKIPPED, RunResult
from patchlane.lanes.replay.results import FROZEN as FROZEN_OUTCOME
from patchlane.lanes.replay.run import child_env, pytest_args, run_tests
from tests.gitrepo import GitRepo
from tests.lanes.replay.test_verify import freeze_record, freeze_report
from tests.lanes.replay.trees import wheel_site, write_tree

# ``big_run`` (module scope) is one real pytest run: built once, on one xdist worker.
pytestmark = pytest.mark.xdist_group("replay-run")

TEST_FILE = """\
import os

import pytest


def test_pass():
    # The drawn seed hashes this interpreter, yet the environment is a plain pytest run's:
    # the hash is written down for the receipt's check.
    assert "PYTHONHASHSEED" not in os.environ and "PATCHLANE_SEED" not in os.environ
    with open("seen-hash-seed.txt", "w") as f:
        f.write(str(hash("patchlane")))


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
    repo: GitRepo,
    nodeids: list[str],
    freeze: Path | None = None,
    timeout_s: float = 120.0,
) -> RunResult:
    data = slicefile.render(nodeids)
    return run_slice(
        repo.path,
        slicefile.parse(data, "slice"),
        slicefile.sha256(data),
        HostRun(
            seed=4242,
            head=repo.head(),
            host_role="test-host",
            freeze_report=freeze,
            timeout_s=timeout_s,
        ),
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


@pytest.mark.slow
def test_only_a_pass_is_passed(big_run: tuple[GitRepo, RunResult]) -> None:
    _, result = big_run
    assert result.receipt.passed_nodeids == tuple(sorted([PASS, P1, KEPT]))


def hash_under(seed: int | None) -> str:
    """``hash("patchlane")`` in an interpreter started with ``PYTHONHASHSEED=seed``."""
    import subprocess
    import sys

    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    code = "print(hash('patchlane'), end='')"
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.slow
def test_the_receipt_records_the_hash_seed_the_run_drew(big_run: tuple[GitRepo, RunResult]) -> None:
    repo, result = big_run
    seen = (repo.path / "seen-hash-seed.txt").read_text(encoding="utf-8")
    assert seen == hash_under(result.receipt.hash_seed)
    assert result.receipt.seed == 4242  # the public seed the receipt answers to
    assert result.receipt.hash_seed is not None and 0 <= result.receipt.hash_seed < 2**32
    assert result.receipt.to_json()["hash_seed"] == result.receipt.hash_seed


@pytest.mark.slow
@pytest.mark.parametrize(
    "nodeid", [FAIL, ERROR, TEARDOWN, NOT_IN_PLAY, P2, MISSING, NO_FILE, BROKEN, DESELECTED]
)
def test_everything_else_is_failed(big_run: tuple[GitRepo, RunResult], nodeid: str) -> None:
    # fail, fixture error, teardown error, a freeze not in play, a parametrised sibling, not
    # collected, no such file, a file that does not import, and a node a conftest deselected.
    _, result = big_run
    assert nodeid in result.receipt.failed_nodeids
    assert result.run.results[nodeid].why


def test_the_suites_own_skips_and_xfails_are_neither_pass_nor_failure(
    big_run: tuple[GitRepo, RunResult],
) -> None:
    _, result = big_run
    assert result.receipt.skipped_nodeids == tuple(sorted([OWN_SKIP, XFAIL]))
    assert "its own reason" in result.run.results[OWN_SKIP].why


@pytest.mark.slow
def test_the_in_play_passing_freeze_is_skipped_by_freeze(
    big_run: tuple[GitRepo, RunResult],
) -> None:
    _, result = big_run
    assert result.receipt.skipped_by_freeze == (FROZEN,)


def test_the_receipt_covers_the_slice_and_names_the_run(big_run: tuple[GitRepo, RunResult]) -> None:
    repo, result = big_run
    r = result.receipt
    listed = [*(r.passed_nodeids or ()), *r.failed_nodeids, *r.skipped_by_freeze]
    assert sorted([*listed, *(r.skipped_nodeids or ())]) == sorted(ALL)
    assert r.slice_sha256 == slicefile.sha256(slicefile.render(ALL))
    assert (r.seed, r.head, r.host_role) == (4242, repo.head(), "test-host")
    assert r.started is not None and r.finished is not None and r.started <= r.finished
    assert r.patchlane_version and r.signature is None
    assert result.run.exit_code == 1 and not result.run.timed_out
    assert result.run.problems == ()


@pytest.mark.slow
def test_without_a_freeze_report_the_frozen_node_fails(repo: GitRepo) -> None:
    make_repo(repo.path)
    result = run(repo, [PASS, FROZEN])
    assert result.receipt.failed_nodeids == (FROZEN,)
    assert result.receipt.skipped_by_freeze == ()


@pytest.mark.slow
def test_the_timeout_kills_the_process_group_and_fails_every_node(
    repo: GitRepo, tmp_path: Path
) -> None:
    # A duration no other process on the machine sleeps for: the sandboxed child lives in
    # its own pid namespace, so the pids it could write down mean nothing out here.
    nap = f"300.{os.getpid()}"
    repo.write(
        "tests/test_slow.py",
        "import os, subprocess, time\n\n"
        "def test_fast():\n    pass\n\n"
        "def test_slow():\n"
        f"    child = subprocess.Popen(['sleep', {nap!r}])\n"
        "    time.sleep(300)\n",
    )
    repo.commit("slow")
    start = time.monotonic()
    result = run(
        repo, ["tests/test_slow.py::test_fast", "tests/test_slow.py::test_slow"], timeout_s=8
    )
    assert time.monotonic() - start < 60
    assert result.run.timed_out and result.run.exit_code is None
    # The fast test's pass streamed before the clock ran out, but a run that never said how it
    # ended cannot pass: every node is failed.
    assert result.receipt.passed_nodeids == ()
    assert len(result.receipt.failed_nodeids) == 2
    assert _sleepers(nap) == []


def _sleepers(nap: str) -> list[int]:
    """The live processes running ``sleep nap`` (after up to 5 s for them to go)."""
    deadline = time.monotonic() + 5
    while True:
        found = []
        for stat in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if stat.read_bytes().split(b"\0")[:2] == [b"sleep", nap.encode()]:
                    found.append(int(stat.parent.name))
            except OSError:
                continue
        found = [pid for pid in found if _alive(pid)]
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


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


@pytest.mark.slow
def test_pythonhashseed_and_patchlane_seed_reach_the_tests(repo: GitRepo) -> None:
    make_repo(repo.path)
    assert run(repo, [PASS]).receipt.passed_nodeids == (PASS,)


@pytest.mark.slow
def test_pytest_addopts_from_the_host_cannot_deselect(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_repo(repo.path)
    monkeypatch.setenv("PYTEST_ADDOPTS", "-k nothing_matches")
    assert run(repo, [PASS]).receipt.passed_nodeids == (PASS,)


def test_an_empty_slice_is_not_run() -> None:
    with pytest.raises(ValueError, match="empty"):
        run_slice(
            Path(os.devnull),
            (),
            slicefile.sha256(b""),
            HostRun(
                seed=1,
                head=None,
                host_role="x",
                freeze_report=None,
                timeout_s=1,
            ),
        )


@pytest.mark.slow
def test_a_conftest_that_breaks_pytest_fails_every_node(repo: GitRepo) -> None:
    make_repo(repo.path)
    repo.write("tests/conftest.py", "raise RuntimeError('broken harness')\n")
    repo.commit("break the harness")
    result = run(repo, [PASS, P1])
    assert result.receipt.passed_nodeids == ()
    assert result.receipt.failed_nodeids == tuple(sorted([PASS, P1]))
    assert result.run.exit_code not in (0, 1, 5, None)
    assert result.run.problems
    assert b"broken harness" in result.output_tail


# --- subtests, retries, exit status, interpreter exit: real suites' shapes ---------------------

SUBTESTS = """\
import unittest


class Cases(unittest.TestCase):
    def test_each(self):
        for n in range(4):
            with self.subTest(n=n):
                self.assertNotEqual(n, 2)

    def test_all_good(self):
        for n in range(3):
            with self.subTest(n=n):
                self.assertGreaterEqual(n, 0)
"""

SUBTESTS_FIXTURE = """\
def test_each(subtests):
    for n in range(4):
        with subtests.test(n=n):
            assert n != 3
"""


@pytest.mark.slow
def test_a_failed_unittest_subtest_fails_its_node(repo: GitRepo) -> None:
    repo.write("tests/test_sub.py", SUBTESTS)
    repo.commit("subtests")
    ids = ["tests/test_sub.py::Cases::test_all_good", "tests/test_sub.py::Cases::test_each"]
    result = run(repo, ids)
    assert result.receipt.failed_nodeids == ("tests/test_sub.py::Cases::test_each",)
    assert result.receipt.passed_nodeids == ("tests/test_sub.py::Cases::test_all_good",)


def _has_subtests_fixture() -> bool:
    major = int(pytest.__version__.split(".", 1)[0])
    if major >= 9:
        return True
    import importlib.util

    return importlib.util.find_spec("pytest_subtests") is not None


@pytest.mark.slow
@pytest.mark.skipif(not _has_subtests_fixture(), reason="needs pytest >= 9 or pytest-subtests")
def test_a_failed_subtests_fixture_subtest_fails_its_node(repo: GitRepo) -> None:
    repo.write("tests/test_subfix.py", SUBTESTS_FIXTURE)
    repo.commit("subtests fixture")
    result = run(repo, ["tests/test_subfix.py::test_each"])
    assert result.receipt.failed_nodeids == ("tests/test_subfix.py::test_each",)
    assert "subtest failed" in result.run.results["tests/test_subfix.py::test_each"].why


RERUN = """\
import os
from pathlib import Path

import pytest

COUNT = Path(os.environ["RERUN_COUNT_FILE"])


@pytest.mark.flaky(reruns=3)
def test_passes_on_the_second_try():
    tries = int(COUNT.read_text()) if COUNT.exists() else 0
    COUNT.write_text(str(tries + 1))
    assert tries >= 1
"""


@pytest.mark.slow
def test_a_rerun_marker_cannot_turn_a_failure_into_a_pass(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RERUN_COUNT_FILE", str(repo.path / "count"))
    repo.write("tests/test_rerun.py", RERUN)
    repo.write("pytest.ini", "[pytest]\naddopts = --reruns 2 --strict-markers\n")
    repo.commit("a flaky test with a rerun marker")
    ids = ["tests/test_rerun.py::test_passes_on_the_second_try"]
    result = run(repo, ids)
    assert result.receipt.failed_nodeids == tuple(ids)
    assert (repo.path / "count").read_text() == "1"  # the plugin never ran it a second time


@pytest.mark.slow
def test_the_exit_status_must_agree_with_the_outcomes(repo: GitRepo) -> None:
    make_repo(repo.path)
    repo.write(
        "tests/conftest.py",
        CONFTEST
        + "\n\ndef pytest_sessionfinish(session, exitstatus):\n    session.exitstatus = 1\n",
    )
    repo.commit("a session that fails with no failed test")
    result = run(repo, [PASS, P1])
    assert result.receipt.passed_nodeids == ()
    assert result.receipt.failed_nodeids == tuple(sorted([PASS, P1]))
    assert result.run.problems == ("pytest exited 1 although no node failed",)
    assert "cannot be believed" in result.run.results[PASS].why


@pytest.mark.slow
def test_os_exit_in_the_middle_of_the_run_fails_what_did_not_report(repo: GitRepo) -> None:
    repo.write(
        "tests/test_exit.py",
        "import os\n\ndef test_a():\n    pass\n\ndef test_b():\n    os._exit(0)\n\n"
        "def test_c():\n    pass\n",
    )
    repo.commit("os._exit")
    ids = [f"tests/test_exit.py::test_{c}" for c in "abc"]
    result = run(repo, ids)
    assert result.receipt.passed_nodeids == ()
    assert result.receipt.failed_nodeids == tuple(ids)
    assert "pytest ended without reporting its exit status" in result.run.problems


@pytest.mark.slow
def test_code_at_interpreter_exit_cannot_change_what_was_sent(
    repo: GitRepo, tmp_path: Path
) -> None:
    marker = repo.path / "atexit-ran"
    repo.write(
        "lib/evil.py",
        "import atexit, os\n\n"
        f"def _rewrite():\n    open({str(marker)!r}, 'w').write('ran')\n    os._exit(0)\n\n"
        "atexit.register(_rewrite)\n\ndef add(a, b):\n    return a - b\n",
    )
    repo.write(
        "tests/test_evil.py",
        "import sys\nsys.path.insert(0, 'lib')\nimport evil\n\n"
        "def test_add():\n    assert evil.add(2, 2) == 4\n",
    )
    repo.commit("an atexit hook in the code under test")
    result = run(repo, ["tests/test_evil.py::test_add"])
    assert result.receipt.failed_nodeids == ("tests/test_evil.py::test_add",)
    assert not marker.exists()  # the child ends with os._exit: atexit handlers never run


ODD_NAMES = """\
import pytest


@pytest.mark.parametrize("x", ["a[b", "c::d", "sp ace", "caf\\u00e9", "]"])
def test_odd(x):
    assert x


class TestK:
    @pytest.mark.parametrize("n", [1])
    def test_m(self, n):
        assert n == 1


def twice(n):
    \"\"\"
    >>> twice(2)
    4
    \"\"\"
    return 2 * n
"""


@pytest.mark.slow
def test_odd_node_ids_and_a_bracket_in_the_file_name_run_like_any_other(repo: GitRepo) -> None:
    repo.write("tests/test_odd.py", ODD_NAMES)
    repo.write("tests/test_[weird] name.py", "def test_w():\n    pass\n")
    repo.write("pytest.ini", "[pytest]\naddopts = --doctest-modules\n")
    repo.commit("odd names")
    ids = [
        "tests/test_odd.py::test_odd[a[b]",
        "tests/test_odd.py::test_odd[c::d]",
        "tests/test_odd.py::test_odd[sp ace]",
        "tests/test_odd.py::test_odd[caf\\xe9]",
        "tests/test_odd.py::test_odd[]]",
        "tests/test_odd.py::TestK::test_m[1]",
        "tests/test_odd.py::test_odd.twice",
        "tests/test_[weird] name.py::test_w",
    ]
    result = run(repo, ids)
    assert result.receipt.passed_nodeids == tuple(sorted(ids)), result.run.results


# --- fold: the parent's reading of the stream, record by record --------------------------------


def _fold(records: list[dict[str, object]], ids: list[str], **kw: object) -> dict[str, str]:
    folded = fold(records, ids, (), kw.get("allowed", {}))  # type: ignore[arg-type]
    return {n: r.outcome for n, r in folded.results.items()}


def _node(nodeid: str, *reports: tuple[str, str], **extra: object) -> list[dict[str, object]]:
    out: list[dict[str, object]] = [{"n": nodeid, "w": w, "o": o, **extra} for w, o in reports]
    return [*out, {"fin": nodeid}]


def test_a_later_passing_report_never_washes_out_a_failure() -> None:
    records = [
        {"collected": ["a::t"]},
        {"n": "a::t", "w": "call", "o": "failed", "sub": True},
        *_node("a::t", ("setup", "passed"), ("call", "passed"), ("teardown", "passed")),
        {"exit": 1},
    ]
    assert _fold(records, ["a::t"]) == {"a::t": FAILED}


def test_a_rerun_report_is_a_failure() -> None:
    records = [
        {"collected": ["a::t"]},
        {"n": "a::t", "w": "call", "o": "rerun"},
        *_node("a::t", ("setup", "passed"), ("call", "passed"), ("teardown", "passed")),
        {"exit": 0},
    ]
    assert _fold(records, ["a::t"]) == {"a::t": FAILED}


def test_a_node_without_its_end_or_its_call_is_failed() -> None:
    records = [
        {"collected": ["a::t", "a::u"]},
        {"n": "a::t", "w": "setup", "o": "passed"},
        {"n": "a::t", "w": "call", "o": "passed"},  # no teardown, no end of protocol
        *_node("a::u", ("setup", "passed"), ("teardown", "passed")),  # no call
        {"exit": 0},
    ]
    assert _fold(records, ["a::t", "a::u"]) == {"a::t": FAILED, "a::u": FAILED}


def test_a_granted_freeze_skip_is_frozen_and_any_other_skip_is_the_suites() -> None:
    from patchlane.pytest_plugin import skip_reason

    granted = f"Skipped: {skip_reason('f1', '2026-10-08')}"
    records = [
        {"collected": ["a::f", "a::s"]},
        *_node("a::f", ("setup", "skipped"), ("teardown", "passed"), msg=granted),
        *_node("a::s", ("setup", "skipped"), ("teardown", "passed"), msg=granted),
        {"exit": 0},
    ]
    # a::s carries the same text but no grant: it is a skip of the suite, not a freeze.
    got = _fold(records, ["a::f", "a::s"], allowed={"a::f": ("f1", "2026-10-08")})
    assert got == {"a::f": FROZEN_OUTCOME, "a::s": SKIPPED}


def test_a_non_strict_xpass_is_neither_evidence_nor_failure() -> None:
    records = [
        {"collected": ["a::x"]},
        *_node("a::x", ("setup", "passed"), ("call", "passed"), ("teardown", "passed"), x=True),
        {"exit": 0},
    ]
    assert _fold(records, ["a::x"]) == {"a::x": SKIPPED}


@pytest.mark.parametrize(
    ("exit_code", "expected"),
    [(0, PASSED), (2, FAILED), (3, FAILED), (4, FAILED), (5, FAILED), (None, FAILED)],
)
def test_an_exit_status_other_than_success_makes_every_pass_a_failure(
    exit_code: int | None, expected: str
) -> None:
    records: list[dict[str, object]] = [
        {"collected": ["a::t"]},
        *_node("a::t", ("setup", "passed"), ("call", "passed"), ("teardown", "passed")),
    ]
    if exit_code is not None:
        records.append({"exit": exit_code})
    assert _fold(records, ["a::t"]) == {"a::t": expected}


def test_exit_0_with_a_failed_node_keeps_the_failure_and_says_so() -> None:
    records = [
        {"collected": ["a::t"]},
        *_node("a::t", ("setup", "passed"), ("call", "failed"), ("teardown", "passed")),
        {"exit": 0},
    ]
    folded = fold(records, ["a::t"], (), {})
    assert folded.results["a::t"].outcome == FAILED
    assert folded.problems == ("pytest exited 0 although a node failed",)


def test_the_child_does_not_inherit_a_calling_pytest_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """patchlane run from inside a pytest session (an xdist worker, a CI step in a test)
    hands its pytest child none of that session's variables: plugins read them to change
    mode, and options in them would change which tests run."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", "abc")
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/test_x.py::test_y (call)")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-k nothing")
    monkeypatch.setenv("PATCHLANE_TEST_KEPT", "1")
    env = child_env(11)
    assert not [k for k in env if k.startswith(("PYTEST_XDIST_", "PYTEST_CURRENT", "PYTEST_ADD"))]
    assert env["PATCHLANE_TEST_KEPT"] == "1"
    assert env["PYTHONHASHSEED"] == "11"


# --- the project's own warning filters (issue 19) ---------------------------------------------

WARNS = """\
import warnings

import pytest


def test_green():
    pass


def test_warns():
    warnings.warn("a notice", {category})
"""
ERRORS_INI = "[pytest]\nfilterwarnings = error\n"


def _plain_pytest(tree: Path) -> int:
    # As a user's shell has it: not this suite's xdist worker variables, which switch plugins
    # (pytest-benchmark warns, and the project makes warnings errors).
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "PYTHONHASHSEED" and not k.startswith(("PYTEST_XDIST_", "PYTEST_CURRENT_TEST"))
    }
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    return subprocess.run(argv, cwd=tree, env=env, capture_output=True, check=False).returncode


@pytest.mark.slow
@pytest.mark.parametrize(
    "category", ["pytest.PytestAssertRewriteWarning", "UserWarning", "DeprecationWarning"]
)
def test_a_warning_the_projects_filterwarnings_makes_an_error_fails_as_under_plain_pytest(
    tmp_path: Path, category: str
) -> None:
    tree = write_tree(
        tmp_path / "tree",
        {"pytest.ini": ERRORS_INI, "tests/test_w.py": WARNS.format(category=category)},
    )
    assert _plain_pytest(tree) == 1
    ids = ["tests/test_w.py::test_green", "tests/test_w.py::test_warns"]
    run = run_tests(tree, nodeids=ids, hash_seed=1, timeout_s=60)
    assert {n: r.outcome for n, r in run.results.items()} == {ids[0]: PASSED, ids[1]: FAILED}
    assert "-W" not in pytest_args(tree, None)


@pytest.mark.slow
def test_patchlane_installed_from_a_wheel_starts_where_warnings_are_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pytest marks an installed plugin's package for rewriting and warns when it is already
    # imported, as the child's patchlane is: under `filterwarnings = error` no test could
    # run. The package's docstring says PYTEST_DONT_REWRITE, so no -W is needed to hide it.
    site = wheel_site(tmp_path / "site")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    tree = write_tree(
        tmp_path / "tree",
        {"pytest.ini": ERRORS_INI, "tests/test_w.py": "def test_a():\n    pass\n"},
    )
    run = run_tests(tree, nodeids=["tests/test_w.py::test_a"], hash_seed=1, timeout_s=60)
    assert run.results["tests/test_w.py::test_a"].outcome == PASSED, run.output_tail
    assert run.problems == ()


def test_a_failure_is_told_by_its_failing_assertion_and_where(
    big_run: tuple[GitRepo, RunResult],
) -> None:
    # pytest's crash message (``reprcrash``), then its last line (file, line and type).
    _, result = big_run
    why = result.run.results[FAIL].why
    assert why.startswith("call failed: assert False (tests/test_x.py:")
    assert why.endswith(": AssertionError)")
    assert result.run.results[ERROR].why.startswith("setup failed: RuntimeError: fixture error (")
