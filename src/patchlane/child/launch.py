"""The launcher a replay's test process starts under, in the sandbox (decision 0032).

A replay's test process sees the host's process table, as a plain run does: no pid
namespace (``infra.sandbox``, ``Isolation.host_processes``). What the pid namespace kept from
it, the kernel's Landlock keeps instead, and this launcher, run by path as
``python -I -S launch.py STATUS_FD -- ARGV...`` inside bubblewrap, puts it in force:

1. no new privileges, then a Landlock domain scoped to signals and abstract unix sockets
   (ABI 6): from here on, nothing in this process or its descendants can signal, ptrace
   (``/proc/PID/environ``, ``mem``, ``fd``, ``exe``) or reach the abstract sockets of any
   process outside the domain. If that cannot be done it writes ``0`` and why on
   ``STATUS_FD`` and exits with ``REFUSED``: the tests never run unconfined. Otherwise it
   writes ``1`` and closes ``STATUS_FD`` (the tests never get it, so they cannot forge it);
2. it becomes a child subreaper, so that every orphaned descendant is reparented to it;
3. it forks; the child executes ``ARGV`` with this process's descriptors, working directory,
   process group and its environment block exactly as it started (``/proc/self/environ``,
   order and all: not ``os.environ``, which the interpreter may have added to);
4. it waits for the test process, then kills and reaps every descendant left (a daemon a
   test started), one generation at a time, and exits with the test process's status: a
   signal death is raised again on itself.

Standard library only, and nothing of patchlane: it runs before the tests, in the sandbox,
from its own path. The gate does not rely on it surviving: after every run it also kills
every process left in the run's network namespace (``infra.hostprocs``).
"""

# Stdlib only, on strings and descriptors as the kernel hands them.
# ruff: noqa: PTH208

from __future__ import annotations

import ctypes
import os
import signal
import struct
import sys
import time

# The launcher's own exit when it could not confine itself (``STATUS_FD`` says so, which
# is what the gate believes: a test can exit with any status).
REFUSED = 121
# Linux syscall numbers, the same on every architecture but alpha.
_SYS_CREATE_RULESET = 444
_SYS_RESTRICT_SELF = 446
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38
# struct landlock_ruleset_attr.scoped (ABI 6): LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | SIGNAL.
_SCOPES = 0x1 | 0x2
# How long the sweep of leftover descendants may take before the launcher exits anyway
# (the gate kills what is left in the run's network namespace).
_SWEEP_S = 5.0


def confine() -> str:
    """Restrict this process (and all it will start) to its own Landlock domain, scoped
    to signals and abstract unix sockets. Returns ``""``, or why it could not."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}"
    # handled_access_fs, handled_access_net, scoped: only the scopes (the file system is
    # bubblewrap's to confine).
    attr = ctypes.create_string_buffer(struct.pack("QQQ", 0, 0, _SCOPES))
    fd = libc.syscall(_SYS_CREATE_RULESET, attr, ctypes.c_size_t(24), ctypes.c_uint32(0))
    if fd < 0:
        return f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}"
    try:
        if libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            return f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}"
    finally:
        os.close(fd)
    return ""


def main(args: list[str]) -> int:
    """Run the launcher on ``args`` (``STATUS_FD -- ARGV...``); returns the exit status
    (the test process's; ``REFUSED`` when it could not confine itself, 2 for bad
    arguments). A test process killed by a signal is killed again here by the same
    signal."""
    if len(args) < 3 or args[1] != "--" or not args[0].isdigit():
        sys.stderr.write("launch.py: usage: STATUS_FD -- ARGV...\n")
        return 2
    status, argv = int(args[0]), args[2:]
    why = confine()
    if why:
        _say(status, b"0" + why.encode("utf-8", "replace"))
        sys.stderr.write(f"patchlane launcher: cannot confine the tests: {why}\n")
        return REFUSED
    _say(status, b"1")
    environ = _environ_block()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    pid = os.fork()
    if pid == 0:  # the test process
        # What the interpreter set at its start and an exec keeps (as ``subprocess``'s
        # ``restore_signals``): a plain run starts with both at their default.
        for number in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(number, signal.SIG_DFL)
        try:
            os.execve(argv[0], argv, environ)  # noqa: S606 - the test process itself
        except OSError as e:
            sys.stderr.write(f"patchlane launcher: cannot run {argv[0]}: {e}\n")
        os._exit(127)
    # Not the test's to keep open through this process: its job socket, its pipes.
    os.closerange(3, _max_fd())
    code = _wait_for(pid)
    _sweep()
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code & 0xFF if code >= 0 else 128 - code


def _say(fd: int, what: bytes) -> None:
    try:
        os.write(fd, what)
        os.close(fd)
    except OSError:
        pass  # no one listening: the exit status still says it


def _environ_block() -> dict[bytes, bytes]:
    """This process's environment as it was started with (``/proc/self/environ``, in
    order), not ``os.environ``: the interpreter may have set variables of its own (the C
    locale's coercion)."""
    try:
        with open("/proc/self/environ", "rb") as f:  # noqa: PTH123 - bytes, stdlib only
            raw = f.read()
    except OSError:
        return dict(os.environb)
    pairs = (entry.partition(b"=") for entry in raw.split(b"\0") if b"=" in entry)
    return {name: value for name, _, value in pairs}


def _max_fd() -> int:
    try:
        return max(int(n) for n in os.listdir("/proc/self/fd")) + 1
    except (OSError, ValueError):
        return 1024


def _wait_for(pid: int) -> int:
    """Reap children until ``pid`` ends; return its exit code, or minus the signal that
    killed it."""
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 1
        except InterruptedError:
            continue
        if done == pid:
            return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _sweep() -> None:
    """Kill and reap every descendant left: each round kills this process's children
    (orphans are reparented to it, a subreaper), until it has none."""
    me, end = os.getpid(), time.monotonic() + _SWEEP_S
    while time.monotonic() < end:
        kids = _children(me)
        for kid in kids:
            try:  # noqa: SIM105 - contextlib costs the start-up 4 ms
                os.kill(kid, signal.SIGKILL)
            except OSError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            return  # no child left, live or dead
        time.sleep(0.005)  # children killed but not yet dead: the next round reaps them


def _children(me: int) -> list[int]:
    """The live processes whose parent is ``me`` (from ``/proc/PID/stat``)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:  # noqa: PTH123
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[1] == str(me).encode() and fields[0] != b"Z":
            found.append(int(entry))
    return found


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
