"""Start one child, feed it its job, watch it against a wall clock, and kill its group.

The child runs in its own session (so its process group id is its pid), with stdin a pipe
(the job), stdout and stderr captured but only their last 64 KiB kept (never parsed), and
one extra pipe for results. When the child exits, or the clock runs out, the whole process
group is sent SIGKILL, which also ends any grandchild still in it; the exit is detected
without reaping (``waitid(WNOWAIT)``), so the group id cannot have been reused by then.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import patchlane
from patchlane.infra import children, sandbox
from patchlane.infra.bytecode import prepare_prefix, process_pycache
from patchlane.infra.hostprocs import ConfinementRefused, Launched
from patchlane.infra.resultchannel import Listen, Listener, Question, parse_results
from patchlane.infra.sandbox import Confinement, Isolation

CHILD_MODULE = "patchlane.child.properties"
# -s: no user site-packages; -P: nothing (not even the cwd) prepended to sys.path;
# -X utf8: one text encoding whatever the locale. Not -I: it would also ignore
# PYTHONHASHSEED. No -B: bytecode goes to the environment's PYTHONPYCACHEPREFIX
# (``patchlane.infra.bytecode.process_pycache``), never into the tree, and only for the installed
# modules the child imports before the tree is on ``sys.path``.
PYTHON_ARGV = (sys.executable, "-s", "-P", "-X", "utf8")
CHILD_ARGV = (*PYTHON_ARGV, "-m", CHILD_MODULE)
TAIL_BYTES = 64 * 1024
# What a job on a socket starts with, then its length (8 bytes, big-endian): the plugin
# (``patchlane.pytest_plugin``) peeks for it and takes stdin only when it is there.
JOB_MAGIC = b"\x00patchlane-job\x01"
RESULT_LIMIT = 8 * 1024 * 1024
# After the child is gone, how long its pipes may stay open (a grandchild outside the
# group, which SIGKILL to the group could not reach).
DRAIN_S = 2.0


@dataclass(frozen=True)
class ChildRun:
    """What one child did: its records (token checked, in order), protocol problems, and
    the process facts. ``returncode`` is negative for a signal; ``timed_out`` when the
    wall clock ran out and the group was killed."""

    records: tuple[dict[str, object], ...]
    done_count: int | None
    problems: tuple[str, ...]
    returncode: int
    timed_out: bool
    seconds: float
    stdout_tail: bytes
    stderr_tail: bytes


def minimal_env(home: Path) -> dict[str, str]:
    """Return the child's whole environment: nothing of the caller's (no ``CI``, no
    ``HYPOTHESIS_*``, no ``PYTHONPATH`` unless patchlane itself needs one), a fixed
    ``PYTHONHASHSEED``, an empty home directory and the process's bytecode prefix
    (``patchlane.infra.bytecode.process_pycache``). Raises ``OSError`` when the prefix cannot be
    made."""
    env = {
        "PATH": os.defpath,
        "PYTHONHASHSEED": "0",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": os.fspath(home),
        "TMPDIR": os.fspath(home),
        "PYTHONPYCACHEPREFIX": process_pycache(),
    }
    extra = _patchlane_path()
    if extra is not None:
        env["PYTHONPATH"] = extra
    return env


@functools.cache
def _patchlane_path() -> str | None:
    """Return the directory to put on the child's ``PYTHONPATH`` so that it imports this
    very patchlane, or ``None`` when the interpreter finds it without help (installed).

    Probed once per process: a child started like the real ones prints where its
    ``patchlane`` comes from.
    """
    ours = os.path.realpath(patchlane.__file__)
    env = {"PATH": os.defpath, "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
    probe = "import patchlane, sys; sys.stdout.write(patchlane.__file__)"
    try:
        proc = subprocess.run(
            [sys.executable, "-s", "-P", "-B", "-c", probe],
            env=env,
            capture_output=True,
            timeout=30,
            check=False,
            cwd="/",
        )
        theirs = os.path.realpath(proc.stdout.decode("utf-8", "replace"))
    except (OSError, subprocess.TimeoutExpired):
        theirs = ""
    if theirs == ours:
        return None
    return os.fspath(Path(ours).parent.parent)


@dataclass(frozen=True)
class Launch:
    """What one child is started with: ``argv``, its ``job`` (sent as JSON on stdin, with
    ``result_fd`` and ``token`` added), its wall clock ``timeout_s``, its working directory
    ``cwd`` and environment ``env``, its ``confinement`` and ``isolation`` (see
    ``run_child``) and ``result_limit``, the bytes its result channel may carry."""

    argv: Sequence[str]
    job: Mapping[str, object]
    token: str
    timeout_s: float
    cwd: Path
    env: dict[str, str]
    confinement: Confinement | None
    isolation: Isolation | None = None
    result_limit: int = RESULT_LIMIT
    # The job goes to patchlane's pytest plugin on a socket as stdin (``JOB_MAGIC``, its
    # length, the JSON), which the plugin takes at import and replaces with ``/dev/null``:
    # the child is a plain ``python -m pytest`` (docs/explanation/decisions/0031-plain-run.md).
    job_socket: bool = False


def run_child(
    launch: Launch,
    *,
    stop: threading.Event | None = None,
    listen: Listen | None = None,
) -> ChildRun:
    """Run ``launch`` (``start_child``) to its end and return the ``ChildRun``. Never raises
    for anything the child does; raises what ``start_child`` and ``Child.finish`` raise."""
    with start_child(launch, stop=stop, listen=listen) as child:
        return child.finish()


def start_child(
    launch: Launch,
    *,
    asks: bool = False,
    stop: threading.Event | None = None,
    listen: Listen | None = None,
) -> Child:
    """Start ``launch.argv`` with ``launch.job`` (plus ``result_fd`` and ``token``) as JSON on
    stdin, and return its ``Child``: a context manager whose end kills the child's group if
    it still runs and closes every pipe, whatever was asked of it (``Child.close``).

    With ``confinement`` (every child that runs the patch's code), the child starts in
    ``isolation`` (default: this machine's, ``patchlane.infra.sandbox.isolation``) with what the
    confinement allows, from ``cwd``, with ``env`` less its credentials and the scratch
    directory as its home; ``None`` only for children that run patchlane's own code.

    ``result_limit`` bounds the bytes the result channel may carry (past it the child is
    killed and the run has a problem). With ``asks``, the job also names ``answer_fd``: the
    first record carrying ``resultchannel.ASK`` is the child's one question
    (``Child.question``), answered once (``Child.answer``: written to that descriptor and
    closed; the child reads it to its end); the child's clock keeps running meanwhile. With
    ``listen``, the records are also handed to it as they arrive, and it is called on every
    turn of the watch loop (for progress: what it does changes nothing of the run). Once
    ``stop`` is set the child's group is killed as at its deadline (``timed_out``): no
    longer wanted.

    Raises ``OSError`` only when the process cannot be started at all.
    """
    job, token, cwd = launch.job, launch.token, launch.cwd
    read_fd, write_fd = os.pipe()
    ask_read, ask_write = os.pipe() if asks else (-1, -1)
    extra = {"answer_fd": ask_read} if asks else {}
    payload = json.dumps({**job, **extra, "result_fd": write_fd, "token": token}).encode("utf-8")
    launched = _launched(launch)
    try:
        argv, env, wrapped = _confined(
            launch.argv, launch.env, cwd, launch.confinement, launch.isolation, launched
        )
    except BaseException:
        _close(read_fd, write_fd, ask_read, ask_write)
        _refused(launched)
        raise
    start = time.monotonic()
    sock = _JobSocket(payload, launch.timeout_s) if launch.job_socket else None
    fds = (write_fd,) if not asks else (write_fd, ask_read)
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if sock is None else sock.child.fileno(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=fds if launched is None else (*fds, *launched.pass_fds),
            start_new_session=True,
            env=env,
            cwd=cwd,
        )
    except BaseException:
        _close(read_fd, ask_write)
        if sock is not None:
            sock.close()
        _refused(launched)
        raise
    finally:
        os.close(write_fd)
        if asks:
            os.close(ask_read)
        if sock is not None:
            sock.child.close()
        if launched is not None:
            launched.started()
    question = Question(token, ask_write) if asks else None
    watch = _Watch(proc, read_fd, start + launch.timeout_s, launch.result_limit, question, stop)
    watch.listener = None if listen is None else Listener(token, listen)
    watch.launched = launched
    child = Child(watch, sock, launch, start, wrapped)
    try:
        if sock is None:
            watch.feed(payload)
        else:
            sock.feed()
    except BaseException:
        child.close()
        raise
    return child


class Child:
    """One started child (``start_child``), watched step by step: ``question`` (when it
    was started to ask), ``answer``, ``finish``. Leaving its ``with`` block (``close``)
    kills its group if it still runs and closes every pipe: a child asked nothing more, or
    never answered, is ended there, never left waiting."""

    def __init__(
        self,
        watch: _Watch,
        sock: _JobSocket | None,
        launch: Launch,
        start: float,
        wrapped: bool,
    ) -> None:
        self._watch = watch
        self._sock = sock
        self._launch = launch
        self._start = start
        self._wrapped = wrapped
        self._closed = False

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def question(self) -> tuple[dict[str, object], ...] | None:
        """Watch the child until it asks; return the records so far (token checked, the
        question last), or ``None`` when it ended (or its clock ran out) without asking,
        or was started without ``asks``. Raises ``KeyboardInterrupt`` when the command is
        being interrupted (``children``)."""
        question = self._watch.question
        if question is None:
            return None
        self._watch.loop(until_asked=True)
        return question.asked

    def answer(self, data: bytes) -> None:
        """Answer the child's question with ``data`` (written from a thread, then the
        descriptor closed); once only, and nothing when it was started without ``asks``."""
        if self._watch.question is not None:
            self._watch.question.reply(data)

    def finish(self) -> ChildRun:
        """Watch the child to its end (its exit, its clock, ``stop``), kill its group and
        return the ``ChildRun``. Raises ``ConfinementRefused`` when the sandbox's launcher
        could not confine a replay's test process (``infra.hostprocs``: it never runs the
        tests then), ``KeyboardInterrupt`` as ``question`` does."""
        watch, limit = self._watch, self._launch.result_limit
        watch.loop()
        refused = self._close()
        if refused is not None:
            raise ConfinementRefused(
                f"the sandbox's launcher could not confine the test process ({refused}); "
                "the tests did not run"
            )
        records, done, problems = parse_results(bytes(watch.results), self._launch.token)
        if watch.overflow:
            problems.insert(0, f"more than {limit} bytes on the result channel")
        return ChildRun(
            records=tuple(records),
            done_count=done,
            problems=tuple(problems),
            returncode=_returncode(watch.proc.returncode, self._wrapped),
            timed_out=watch.timed_out,
            seconds=time.monotonic() - self._start,
            stdout_tail=bytes(watch.tails[0]),
            stderr_tail=bytes(watch.tails[1]),
        )

    def close(self) -> None:
        """Kill the child's group if it still runs, close every pipe (an unanswered
        question's too); nothing the second time."""
        self._close()

    def _close(self) -> str | None:
        """``close``; return why the launcher refused to run the tests (``_refused``)."""
        if self._closed:
            return None
        self._closed = True
        try:
            self._watch.close()
        finally:
            if self._sock is not None:
                self._sock.close()
            refused = _refused(self._watch.launched)
        return refused


class _JobSocket:
    """The job on a socket pair: ``child`` is the child's stdin. The header (``JOB_MAGIC``
    and the length) is written before the child starts, so that the plugin's non-blocking
    peek at import finds it; the JSON follows (``feed``), written from a thread so that a
    child that never reads it (its plugin did not load) cannot stop the watch, whose clock
    ends it."""

    def __init__(self, payload: bytes, timeout_s: float) -> None:
        self.parent, self.child = socket.socketpair()
        self.payload = payload
        self.timeout_s = timeout_s
        self.parent.sendall(JOB_MAGIC + len(payload).to_bytes(8, "big"))

    def feed(self) -> None:
        """Send the job from a thread; the socket is closed by ``close``."""
        threading.Thread(target=self._send, daemon=True).start()

    def _send(self) -> None:
        with contextlib.suppress(OSError):
            self.parent.settimeout(self.timeout_s)
            self.parent.sendall(self.payload)
            self.parent.shutdown(2)  # SHUT_RDWR: nothing more either way

    def close(self) -> None:
        """Close both ends (the child's is closed once it has started)."""
        for end in (self.parent, self.child):
            with contextlib.suppress(OSError):
                end.close()


def _launched(launch: Launch) -> Launched | None:
    """The launcher's pipes when ``launch``'s child runs under it (``Isolation.launches``:
    a replay's test process on the host's process table), else ``None``."""
    if launch.confinement is None:
        return None
    layers = launch.isolation if launch.isolation is not None else sandbox.isolation()
    return Launched.open() if layers.launches(launch.confinement) else None


def _close(*fds: int) -> None:
    """Close each of ``fds`` that is one (``-1``: none)."""
    for fd in fds:
        if fd >= 0:
            os.close(fd)


def _refused(launched: Launched | None) -> str | None:
    """Why the launcher refused to run the tests (``Launched.refused``), or ``None``; its
    pipes closed."""
    if launched is None:
        return None
    try:
        return launched.refused()
    finally:
        launched.close()


def _confined(
    argv: Sequence[str],
    env: dict[str, str],
    cwd: Path,
    confinement: Confinement | None,
    isolation: Isolation | None,
    launched: Launched | None = None,
) -> tuple[Sequence[str], dict[str, str], bool]:
    """``argv`` and ``env`` as the confined child gets them, and whether bwrap wraps it
    (under the launcher, reporting on ``launched``, when that is given)."""
    if confinement is None:
        return argv, env, False
    layers = isolation if isolation is not None else sandbox.isolation()
    env = sandbox.confined_env(env, confinement.scratch, plain=confinement.plain)
    # The child's own import path is part of its environment: shown, read-only.
    paths = [Path(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    confinement = dataclasses.replace(
        confinement, readable=(*confinement.readable, *(p for p in paths if p.is_dir()))
    )
    if layers.sandboxed:
        # Only patchlane's own prefix: a user's (a plain run's environment) is not written.
        # Where the child sees the tree and the places its copies are bound over: no cache
        # below them (the same path holds the base's files in one child, the head's in the
        # next).
        prefix = env.get("PYTHONPYCACHEPREFIX")
        shown = confinement.presented
        extra = () if shown is None else (shown.at, *(dest for _, dest in shown.over))
        if prefix == process_pycache():
            prepare_prefix(prefix, confinement, cwd, *extra)
    return layers.command(argv, confinement, cwd, launched), env, layers.sandboxed


def _returncode(code: int | None, wrapped: bool) -> int:
    """The child's exit status, negative for a signal. bwrap reports a child killed by
    signal N as 128 + N, as a shell does; a child that exits with such a code itself is
    then told apart from one that was killed only in the wording (both fail)."""
    if code is None:
        return -signal.SIGKILL
    if wrapped and 128 < code < 128 + signal.NSIG:
        return -(code - 128)
    return code


class _Watch:
    """The select loop over one child's three output pipes, with its deadline."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        read_fd: int,
        deadline: float,
        limit: int,
        question: Question | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.proc = proc
        self.stop = stop
        self.question = question
        self.listener: Listener | None = None
        self.launched: Launched | None = None
        self.deadline = deadline
        self.limit = limit
        self.results = bytearray()
        self.tails = (bytearray(), bytearray())
        self.timed_out = False
        self.overflow = False
        self.watching = False  # registered with ``children`` (the first ``loop``)
        self.ended = False
        self.selector = selectors.DefaultSelector()
        assert proc.stdout is not None and proc.stderr is not None  # noqa: S101 - PIPEs
        self.fds: dict[int, int] = {read_fd: -1}  # fd -> tail index (-1: results)
        self.fds[proc.stdout.fileno()] = 0
        self.fds[proc.stderr.fileno()] = 1
        self._own = [read_fd]
        for fd in self.fds:
            os.set_blocking(fd, False)
            self.selector.register(fd, selectors.EVENT_READ)

    def feed(self, payload: bytes) -> None:
        """Write the job and close stdin. The child reads it whole before anything else,
        and a child that dies first is the loop's to report (a broken pipe is no error)."""
        stdin = self.proc.stdin
        if stdin is None:  # pragma: no cover - stdin is a PIPE
            return
        with contextlib.suppress(BrokenPipeError, OSError):
            stdin.write(payload)
        with contextlib.suppress(BrokenPipeError, OSError):
            stdin.close()

    def loop(self, until_asked: bool = False) -> None:
        """Read until the child has exited (then kill its group and drain) or the
        deadline passes (then kill its group, reap it and drain); with ``until_asked``,
        only until the child's question has come. Nothing once the child has ended.
        Raises ``KeyboardInterrupt`` when the command is being interrupted (``children``)."""
        if not self.watching:
            self.watching = True
            children.started(self.proc.pid)  # Ctrl-C kills its group (patchlane.infra.children)
        while not self.ended:
            if self._exited():
                self._end()
                return
            remaining = self.deadline - time.monotonic()
            if remaining <= 0 or (self.stop is not None and self.stop.is_set()):
                self.timed_out = True
                self._end()
                return
            self._read_ready(min(remaining, 0.05 if not self.fds else 0.25))
            if self.listener is not None:
                self.listener.look(self.results)
            if until_asked and self.question is not None and self.question.asked is not None:
                return

    def _end(self) -> None:
        """The child exited or is no longer wanted: kill its group, reap it and drain."""
        self.ended = True
        self._kill_group()
        self.proc.wait()
        self._drain(time.monotonic() + DRAIN_S)

    def _exited(self) -> bool:
        # WNOWAIT: see that it exited without reaping it, so that its pid (and group id)
        # stays ours until the group has been killed.
        try:
            info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None

    def _kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.launched is not None:
            # A run on the host's process table: what left the group (a daemon) is still
            # in the run's network namespace.
            self.launched.sweep()

    def _read_ready(self, timeout: float) -> None:
        if not self.fds:
            time.sleep(timeout)
            return
        for key, _ in self.selector.select(timeout):
            self._read(int(key.fd))

    def _read(self, fd: int) -> None:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.selector.unregister(fd)
            del self.fds[fd]
            return
        index = self.fds[fd]
        if index < 0:
            if len(self.results) + len(data) > self.limit:
                self.overflow = True
                self._kill_group()
            else:
                self.results += data
                if self.question is not None:
                    self.question.look(self.results)
            return
        tail = self.tails[index]
        tail += data
        if len(tail) > TAIL_BYTES:
            del tail[:-TAIL_BYTES]

    def _drain(self, until: float) -> None:
        while self.fds and time.monotonic() < until:
            self._read_ready(min(0.1, max(0.0, until - time.monotonic())))

    def close(self) -> None:
        """Stop watching; close our end of the result pipe and the child's pipes."""
        children.ended(self.proc.pid)
        if self.proc.returncode is None:
            self._kill_group()
            self.proc.wait()
        self.selector.close()
        for fd in self._own:
            with contextlib.suppress(OSError):
                os.close(fd)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        if self.question is not None:
            self.question.close()
