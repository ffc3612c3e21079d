"""``process``: one child, its wall clock, its process group and its result channel, on
real processes (``sh`` and ``python``)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from patchlane.infra.process import (
    CHILD_ARGV,
    TAIL_BYTES,
    ChildRun,
    Launch,
    minimal_env,
    run_child,
    start_child,
)
from patchlane.infra.resultchannel import parse_results


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for init counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _wait_dead(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.02)
    return False


def _sh(script: str, tmp_path: Path, timeout_s: float) -> tuple[float, ChildRun]:
    started = time.monotonic()
    run = run_child(
        Launch(
            ["/bin/sh", "-c", script],
            {},
            token="t",  # noqa: S106 - the job token of a stand-in child
            timeout_s=timeout_s,
            cwd=tmp_path,
            env=minimal_env(tmp_path),
            confinement=None,
        ),
    )
    return time.monotonic() - started, run


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_timeout_kills_the_child_and_its_grandchild(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    script = f"sleep 300 & echo $! > {pidfile}; sleep 300"
    elapsed, run = _sh(script, tmp_path, timeout_s=1)
    assert run.timed_out
    assert elapsed < 1 + 5
    grandchild = int(pidfile.read_text())
    assert _wait_dead(grandchild), "the grandchild survived the timeout"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_grandchild_left_behind_holding_the_pipes_is_killed_when_the_child_exits(
    tmp_path: Path,
) -> None:
    # The child exits at once; its grandchild keeps stdout and the result pipe open.
    pidfile = tmp_path / "grandchild.pid"
    script = f"sleep 300 & echo $! > {pidfile}; exit 0"
    elapsed, run = _sh(script, tmp_path, timeout_s=60)
    assert not run.timed_out
    assert run.returncode == 0
    assert elapsed < 10, "waited for a grandchild that held the pipes"
    assert _wait_dead(int(pidfile.read_text()))


def test_only_the_tail_of_stdout_and_stderr_is_kept(tmp_path: Path) -> None:
    script = "head -c 1000000 /dev/zero; head -c 300000 /dev/zero >&2; printf END; printf ERR >&2"
    _, run = _sh(script, tmp_path, timeout_s=30)
    assert len(run.stdout_tail) == TAIL_BYTES and run.stdout_tail.endswith(b"END")
    assert len(run.stderr_tail) == TAIL_BYTES and run.stderr_tail.endswith(b"ERR")


def test_the_job_arrives_on_stdin_with_its_result_descriptor(tmp_path: Path) -> None:
    # A stand-in child that answers through the descriptor the job names.
    code = (
        "import json, os, sys\n"
        "job = json.loads(sys.stdin.read())\n"
        "line = json.dumps({'token': job['token'], 'echo': job['x']}) + '\\n'\n"
        "os.write(job['result_fd'], line.encode())\n"
        "os.write(job['result_fd'], json.dumps({'token': job['token'], 'done': True, 'count': 1}).encode() + b'\\n')\n"
    )
    run = run_child(
        Launch(
            [sys.executable, "-c", code],
            {"x": [1, "two"]},
            token="secret",  # noqa: S106 - the job token of a stand-in child
            timeout_s=30,
            cwd=tmp_path,
            env=minimal_env(tmp_path),
            confinement=None,
        ),
    )
    assert run.records == ({"echo": [1, "two"]},)
    assert run.done_count == 1 and run.problems == () and run.returncode == 0


def test_the_result_channel_is_parsed_strictly() -> None:
    data = (
        b'{"token": "k", "a": 1}\n'
        b"not json\n"
        b'{"token": "wrong", "a": 2}\n'
        b'{"a": 3}\n'
        b'{"token": "k", "a": 1, "a": 2}\n'
        b'{"token": "k", "done": true, "count": 1}\n'
        b'{"token": "k", "a": 4}\n'
        b'{"token": "k", "a": 5}'
    )
    records, done, problems = parse_results(data, "k")
    assert records == [{"a": 1}]
    assert done == 1
    assert problems == [
        "an unterminated line at the end of the result channel",
        "result line 2 is not JSON",
        "result line 3 does not carry the job's token",
        "result line 4 does not carry the job's token",
        "result line 5 is not JSON",
        "result line 7 comes after 'done'",
    ]
    assert parse_results(b'{"token": "k", "done": true, "count": true}\n', "k")[2] == [
        "result line 1: a malformed 'done' line"
    ]


def test_the_child_command_line_is_the_isolated_one() -> None:
    assert CHILD_ARGV[1:] == (
        "-s",
        "-P",
        "-X",
        "utf8",
        "-m",
        "patchlane.child.properties",
    )
    assert "-I" not in CHILD_ARGV  # -I would ignore PYTHONHASHSEED


def test_the_minimal_environment_is_minimal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "ci")
    env = minimal_env(tmp_path)
    assert set(env) - {"PYTHONPATH"} == {
        "PATH", "PYTHONHASHSEED", "LANG", "LC_ALL", "HOME", "TMPDIR", "PYTHONPYCACHEPREFIX",
    }  # fmt: skip
    assert env["PYTHONHASHSEED"] == "0" and env["PATH"] == os.defpath
    assert env["HOME"] == env["TMPDIR"] == str(tmp_path)


ASKING_CHILD = (
    "import json, os, sys\n"
    "job = json.loads(sys.stdin.read())\n"
    "def send(record):\n"
    "    record['token'] = job['token']\n"
    "    os.write(job['result_fd'], json.dumps(record).encode() + b'\\n')\n"
    "send({'seen': 1})\n"
    "send({'ask': 'which'})\n"
    "{after_ask}"
)
READ_AND_ECHO = (
    "data = b''\n"
    "while chunk := os.read(job['answer_fd'], 65536):\n"
    "    data += chunk\n"
    "send({'got': data.decode()})\n"
    "send({'done': True, 'count': 3})\n"
)


def _launch(tmp_path: Path, script: str, timeout_s: float = 30) -> Launch:
    return Launch(
        [sys.executable, "-c", script],
        {},
        token="tok",  # noqa: S106 - the job token of a stand-in child
        timeout_s=timeout_s,
        cwd=tmp_path,
        env=minimal_env(tmp_path),
        confinement=None,
    )


def _asking(tmp_path: Path, after_ask: str, answer: Any, timeout_s: float = 30) -> ChildRun:
    """Start the asking child, answer its question (if it asks) with ``answer(records)``
    and watch it to its end, as the replay's pipeline drives a child that collects."""
    script = ASKING_CHILD.replace("{after_ask}", after_ask)
    with start_child(_launch(tmp_path, script, timeout_s), asks=True) as child:
        records = child.question()
        if records is not None:
            child.answer(answer(records))
        return child.finish()


def test_a_question_is_answered_once_with_the_records_so_far(tmp_path: Path) -> None:
    asked: list[list[dict[str, Any]]] = []

    def answer(records: Any) -> bytes:
        asked.append(list(records))
        return b"x" * 200_000  # larger than a pipe holds: written while the child reads

    run = _asking(tmp_path, READ_AND_ECHO, answer)
    assert asked == [[{"seen": 1}, {"ask": "which"}]]
    assert run.records[-1] == {"got": "x" * 200_000}
    assert run.problems == () and run.returncode == 0


@pytest.mark.slow
def test_a_child_that_asks_and_never_reads_is_killed_by_its_clock(tmp_path: Path) -> None:
    started = time.monotonic()
    run = _asking(tmp_path, "import time\ntime.sleep(300)\n", lambda records: b"x" * 200_000, 2)
    assert run.timed_out
    assert time.monotonic() - started < 2 + 5


def test_what_the_answer_raises_reaches_the_caller_and_the_child_is_killed(
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "child.pid"
    after = f"open({str(pidfile)!r}, 'w').write(str(os.getpid()))\nimport time\ntime.sleep(300)\n"

    def answer(records: Any) -> bytes:
        while not pidfile.exists() or not pidfile.read_text():
            time.sleep(0.01)
        raise LookupError("no choice")

    with pytest.raises(LookupError, match="no choice"):
        _asking(tmp_path, after, answer)
    if Path("/proc").is_dir():
        assert _wait_dead(int(pidfile.read_text()))


def test_a_child_that_never_asks_is_never_answered(tmp_path: Path) -> None:
    def answer(records: Any) -> bytes:
        raise AssertionError("answered without a question")

    script = ASKING_CHILD.replace("send({'ask': 'which'})\n", "").replace("{after_ask}", "")
    with start_child(
        _launch(tmp_path, script + "send({'done': True, 'count': 1})\n"), asks=True
    ) as child:
        records = child.question()
        if records is not None:
            child.answer(answer(records))
        assert records is None
        run = child.finish()
    assert run.records == ({"seen": 1},) and run.problems == ()


def _fds() -> set[str]:
    """This process's open descriptors."""
    return {p.name for p in Path("/proc/self/fd").iterdir()}


def _pid_after_ask(pidfile: Path) -> str:
    """What the asking child does after its question: write its pid, then wait for the
    answer (reading the answer descriptor to its end), then sleep past any test."""
    return (
        f"open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
        "while os.read(job['answer_fd'], 65536):\n"
        "    pass\n"
        "import time\n"
        "time.sleep(300)\n"
    )


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_child_asked_and_never_answered_is_killed_when_its_block_ends(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    before = _fds()
    started = time.monotonic()
    script = ASKING_CHILD.replace("{after_ask}", _pid_after_ask(pidfile))
    with start_child(_launch(tmp_path, script, timeout_s=120), asks=True) as child:
        records = child.question()
        assert records == ({"seen": 1}, {"ask": "which"})
        while not pidfile.exists() or not pidfile.read_text():
            time.sleep(0.01)
    # Left without an answer or ``finish``: no wait for its clock, no process, no pipe.
    assert time.monotonic() - started < 60
    assert _wait_dead(int(pidfile.read_text()))
    assert _fds() == before
    child.close()  # a second close does nothing


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_an_error_between_question_and_answer_kills_the_child(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    before = _fds()
    script = ASKING_CHILD.replace("{after_ask}", _pid_after_ask(pidfile))
    with (
        pytest.raises(LookupError, match="no choice"),
        start_child(_launch(tmp_path, script, timeout_s=120), asks=True) as child,
    ):
        assert child.question() is not None
        while not pidfile.exists() or not pidfile.read_text():
            time.sleep(0.01)
        raise LookupError("no choice")
    assert _wait_dead(int(pidfile.read_text()))
    assert _fds() == before


def test_a_child_that_asks_and_exits_at_once_is_still_asked_and_finishes(tmp_path: Path) -> None:
    script = ASKING_CHILD.replace("{after_ask}", "send({'done': True, 'count': 2})\n")
    with start_child(_launch(tmp_path, script), asks=True) as child:
        assert child.question() == ({"seen": 1}, {"ask": "which"})
        child.answer(b"too late")  # the child is gone or going: the write fails quietly
        run = child.finish()
    assert run.records == ({"seen": 1}, {"ask": "which"}) and run.returncode == 0
