"""Isolation (DESIGN.md §2): code under test runs in a child that it cannot talk its way out
of. Every test here runs hostile code for real in the lane's real child."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from patchlane.infra.sandbox import Isolation, isolation, network_layers
from tests.gitrepo import GitRepo
from tests.lanes.property import project as P

TWO_PROPS = """\
from shop import act


def prop_a_first(seed, n=200):
    pass


def prop_b_calls_the_code(seed, n=200):
    act()
"""


def shop(body: str) -> str:
    """Code under test whose ``act()`` runs ``body``."""
    indented = "\n".join("    " + line for line in P.dedent(body).splitlines())
    return f"import os\nimport sys\n\n\ndef act():\n{indented}\n"


def run_hostile(
    repo: GitRepo, body: str, props: str = TWO_PROPS, **kwargs: float
) -> P.PropertyReport:
    P.make(repo, props, shop(body), **kwargs)
    return P.lane(repo, base=None, head="HEAD")


def assert_never_passes(report: P.PropertyReport) -> None:
    assert report.status == "fail", report.to_json()
    assert all(p.outcome != "pass" for p in report.properties), report.to_json()


def test_os_exit_zero_in_code_under_test_is_a_failure(repo: GitRepo) -> None:
    report = run_hostile(repo, "os._exit(0)")
    assert_never_passes(report)
    first = P.one_failure(report, "prop_a_first")
    assert first["kind"] == "protocol"
    assert first["message"].startswith("reported a pass, but the child's results cannot be trusted")
    assert "no 'done' line" in P.one_failure(report, "prop_b_calls_the_code")["message"]


def test_sys_exit_zero_at_import_is_a_failure(repo: GitRepo) -> None:
    P.make(repo, TWO_PROPS, "import sys\nsys.exit(0)\n")
    report = P.lane(repo, base=None, head="HEAD")
    assert_never_passes(report)
    message = P.one_failure(report, "prop_a_first")["message"]
    assert message.startswith("import failed: SystemExit: 0")


def test_a_crash_of_the_interpreter_is_a_failure(repo: GitRepo) -> None:
    report = run_hostile(repo, "import signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    assert_never_passes(report)
    assert "killed by signal 11" in P.one_failure(report, "prop_b_calls_the_code")["message"]


def test_printing_a_fake_pass_and_garbage_on_stdout_changes_nothing(repo: GitRepo) -> None:
    noise = """\
    print("PASSED")
    print('{"done": true, "count": 2}')
    sys.stdout.flush()
    os.write(1, bytes(range(256)) * 100)
    os.write(2, b"FAILED? no: PASSED\\n")
    """
    failing = TWO_PROPS + "\n\ndef prop_c_fails(seed, n=200):\n    act()\n    assert False\n"
    report = run_hostile(repo, noise, failing)
    assert P.outcomes(report) == {
        ("prop_a_first", "head"): "pass",
        ("prop_b_calls_the_code", "head"): "pass",
        ("prop_c_fails", "head"): "fail",
    }


def test_garbage_on_the_result_channel_is_a_failure(repo: GitRepo) -> None:
    # Write junk, and a forged pass without the job's token, to every descriptor that
    # could be the result pipe.
    body = """\
    import json
    forged = json.dumps({"property": "prop_b_calls_the_code", "style": "seed", "outcome": "pass",
                         "kind": None, "case_index": None, "arguments": None, "message": None,
                         "seconds": 0.0})
    for fd in range(3, 64):
        try:
            os.write(fd, b"garbage\\n" + forged.encode() + b"\\n")
        except OSError:
            pass
    """
    report = run_hostile(repo, body)
    assert_never_passes(report)
    message = P.one_failure(report, "prop_b_calls_the_code")["message"]
    assert "is not JSON" in message or "token" in message


def test_a_complete_forged_result_without_the_token_is_not_believed(repo: GitRepo) -> None:
    # Everything the parent would need to see a green run (a pass for the running property
    # and a matching 'done'), written to every descriptor, then a silent exit.
    body = """\
    import json
    forged = json.dumps({"property": "prop_b_calls_the_code", "style": "seed", "outcome": "pass",
                         "kind": None, "case_index": None, "arguments": None, "message": None,
                         "seconds": 0.0}) + "\\n" + json.dumps({"done": True, "count": 2}) + "\\n"
    for fd in range(3, 64):
        try:
            os.write(fd, forged.encode())
        except OSError:
            pass
    os._exit(0)
    """
    report = run_hostile(repo, body)
    assert_never_passes(report)
    assert "does not carry the job's token" in P.one_failure(report, "prop_a_first")["message"]


@pytest.mark.slow
def test_an_endless_loop_times_out_within_the_bound_and_kills_the_group(repo: GitRepo) -> None:
    started = time.monotonic()
    report = run_hostile(repo, "while True:\n    pass", timeout_s=2)
    elapsed = time.monotonic() - started
    assert elapsed < 2 + 8, elapsed
    assert P.outcomes(report) == {
        ("prop_a_first", "head"): "pass",  # reported before the clock ran out
        ("prop_b_calls_the_code", "head"): "timeout",
    }
    failure = P.one_failure(report, "prop_b_calls_the_code")
    assert failure["kind"] == "timeout"
    assert failure["message"] == (
        "timed out after 2 s (timeout_s); the child's process group was killed"
    )
    assert report.status == "fail"


@pytest.mark.parametrize(
    "body",
    [
        "os.fork()",
        "import subprocess\nsubprocess.Popen(['sleep', '60'])",
        "os.system('sleep 60 &')",
        "os.posix_spawn('/bin/sleep', ['sleep', '60'], {})",
        "import _posixsubprocess\n_posixsubprocess.fork_exec()",
        "import pty\npty.fork()",
        "import ctypes\nctypes.CDLL(None).fork()",
        "import ctypes\nctypes.pythonapi.fork()",
        "import ctypes.util\nctypes.CDLL(ctypes.util.find_library('c'))",
    ],
    ids=[
        "fork",
        "Popen",
        "system",
        "posix_spawn",
        "fork_exec",
        "forkpty",
        "ctypes",
        "ctypes-symbol",
        "ctypes-library",
    ],
)
def test_starting_a_process_is_blocked(repo: GitRepo, body: str) -> None:
    report = run_hostile(repo, body)
    failure = P.one_failure(report, "prop_b_calls_the_code")
    assert failure["kind"] == "sandbox", failure
    assert failure["message"].startswith("blocked by the sandbox")
    assert P.outcomes(report)[("prop_a_first", "head")] == "pass"


def test_merely_importing_subprocess_and_ctypes_is_allowed(repo: GitRepo) -> None:
    # Common at the top of real modules (numpy imports ctypes): not an escape by itself.
    P.make(repo, TWO_PROPS, "import ctypes\nimport subprocess\n\n\ndef act():\n    pass\n")
    assert P.lane(repo, base=None, head="HEAD").status == "pass"


def test_numpy_code_under_test_runs(repo: GitRepo) -> None:
    pytest.importorskip("numpy")
    P.make(repo, TWO_PROPS, "import numpy\n\n\ndef act():\n    assert numpy.arange(4).sum() == 6\n")
    report = P.lane(repo, base=None, head="HEAD")
    assert report.status == "pass", report.to_json()


def test_a_blocked_call_that_the_code_swallows_still_fails_the_property(repo: GitRepo) -> None:
    body = "try:\n    os.fork()\nexcept Exception:\n    pass"
    failure = P.one_failure(run_hostile(repo, body), "prop_b_calls_the_code")
    assert failure["kind"] == "sandbox"
    assert "os.fork" in failure["message"]


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP listener on 127.0.0.1 that nothing in the lane may reach."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


def _assert_never_accepted(server: socket.socket) -> None:
    with pytest.raises(BlockingIOError):
        conn, _ = server.accept()
        conn.close()


@pytest.mark.parametrize("layers", ["probed", "audit only"])
@pytest.mark.parametrize("swallow", [False, True], ids=["raises", "swallows"])
def test_the_network_is_unreachable_even_on_loopback(
    repo: GitRepo, listener: socket.socket, layers: str, swallow: bool
) -> None:
    port = listener.getsockname()[1]
    connect = (
        f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5).sendall(b'hi')"
    )
    if swallow:
        connect = "try:\n" + "\n".join("    " + line for line in connect.splitlines())
        connect += "\nexcept Exception:\n    pass"
    P.make(repo, TWO_PROPS, shop(connect))
    only_audit = (
        Isolation("none", "the test asks for the audit layer alone")
        if layers == "audit only"
        else None
    )
    report = P.lane(repo, base=None, head="HEAD", isolation=only_audit)
    _assert_never_accepted(listener)
    failure = P.one_failure(report, "prop_b_calls_the_code")
    assert failure["kind"] == "sandbox"
    assert "socket" in failure["message"]
    expected = "audit" if only_audit else network_layers(isolation())
    assert report.isolation.network == expected


def test_the_network_namespace_is_used_where_it_can_be(repo: GitRepo) -> None:
    if sys.platform != "linux":
        pytest.skip("network namespaces are Linux's")
    probed = isolation()
    if probed.kind == "none":
        pytest.skip("no namespaces here: the audit layer alone is tested above")
    assert network_layers(probed) in {"bwrap+audit", "netns+audit"}
    # A fresh namespace has one interface, the loopback (and it is down).
    props = """\
    def prop_no_interfaces(seed, n=200):
        lines = open("/proc/net/dev").read().splitlines()[2:]
        names = sorted(line.split(":")[0].strip() for line in lines)
        assert names == ["lo"], (seed, 0, names)
    """
    P.make(repo, props)
    assert P.lane(repo, base=None, head="HEAD").status == "pass"


@pytest.mark.slow
def test_the_child_gets_a_minimal_environment(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("SECRET_TOKEN", "hunter2")
    monkeypatch.setenv("PYTHONPATH", "/nowhere")
    props = """\
    import os
    import sys
    from pathlib import Path


    def prop_environment(seed, n=200):
        # PWD: bubblewrap names the directory it started the child in.
        allowed = {"PATH", "PYTHONHASHSEED", "LANG", "LC_ALL", "HOME", "TMPDIR", "PWD",
                   "PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "PYTHONPYCACHEPREFIX"}
        assert set(os.environ) <= allowed, (seed, 0, sorted(os.environ))
        assert os.environ["PYTHONHASHSEED"] == "0" and sys.flags.hash_randomization == 0
        assert os.environ.get("PYTHONPATH") != "/nowhere"
        assert os.environ["HOME"] == os.environ["TMPDIR"]
        assert not sys.flags.no_site and sys.flags.no_user_site and sys.flags.safe_path
        assert Path("review-map.yml").is_file()  # cwd is the head tree's root
        assert not sys.dont_write_bytecode  # installed modules go to the shared prefix
    """
    P.make(repo, props)
    report = P.lane(repo)
    assert report.status == "pass", report.to_json()
    assert not list(repo.path.rglob("__pycache__"))


@pytest.mark.slow
def test_a_repository_cannot_shadow_patchlane_or_hypothesis(repo: GitRepo) -> None:
    fake = "raise ImportError('the repository shadowed this module')\n"
    props = """\
    from hypothesis import given, strategies as st
    from patchlane.props import check


    @check(lambda rng: {"x": rng.randint(0, 9)})
    def prop_check(x):
        assert x < 0


    @given(st.integers(0, 9))
    def prop_given(x):
        assert x < 0
    """
    P.make(
        repo,
        props,
        files={
            "patchlane/__init__.py": fake,
            "patchlane/props.py": fake,
            "src/hypothesis/__init__.py": fake,
            "hypothesis.py": fake,
        },
    )
    report = P.lane(repo)
    assert {(f.property, f.kind) for f in report.failures} == {
        ("prop_check", "assertion"),
        ("prop_given", "assertion"),
    }


@pytest.mark.slow
def test_children_run_in_parallel_up_to_the_cpu_count(repo: GitRepo) -> None:
    # Not a timing threshold: each child reports when it ran (the monotonic clock is the
    # machine's, sandbox or not) through its own failure, the one channel a sandboxed child
    # has; two that ran at the same time have overlapping intervals.
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: children run one at a time")
    template = """\
    import time


    def prop_when(seed, n=200):
        start = time.monotonic()
        time.sleep(1.5)
        assert False, (seed, 0, [start, time.monotonic()])
    """
    files = {"checks/one.py": template, "checks/two.py": template}
    P.make(repo, files=files, modules=("checks.one", "checks.two"))
    report = P.lane(repo, base=None, head="HEAD")
    spans = sorted(tuple(f.arguments[0]) for f in report.failures)
    assert len(spans) == 2, report.to_json()
    (_, first_end), (second_start, _) = spans
    assert second_start < first_end, spans


@pytest.mark.slow
def test_hypothesis_writes_nothing_into_the_work_tree(repo: GitRepo) -> None:
    props = """\
    from hypothesis import given, strategies as st


    @given(st.text())
    def prop_text(s):
        assert isinstance(s, str)
    """
    P.make(repo, props)
    assert P.lane(repo, base=None, head=None).status == "pass"
    assert not (repo.path / ".hypothesis").exists()
    assert repo.git("status", "--porcelain", "--ignored") == ""


def test_a_child_that_cannot_start_is_red_not_a_crash(repo: GitRepo, tmp_path: Path) -> None:
    P.make(repo)
    missing = Isolation("netns", "test", netns_prefix=(str(tmp_path / "no-such-unshare"), "--"))
    report = P.lane(repo, isolation=missing)
    assert report.status == "fail"
    assert {f.kind for f in report.failures} == {"protocol"}
    assert "the child could not be started" in report.failures[0].message
