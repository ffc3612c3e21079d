"""A replay's test process on the host's process table, kept in its place (decision 0032).

``infra.sandbox`` runs a replay's test process without a pid namespace, under the launcher
``child/launch.py`` (a Landlock domain scoped to signals and abstract unix sockets). This
module holds the host side of it:

- ``landlock_abi``: the kernel's Landlock ABI version (scopes need 6), probed once;
- ``Launched``: the two pipes one such run is started with, bubblewrap's ``--info-fd`` (its
  JSON names the run's network namespace) and the launcher's status (``1`` once it confined
  itself, ``0`` and why when it could not: the gate's error, never a test run unconfined);
- ``sweep``: kill every process on the host whose network namespace is the run's. The
  process-group kill and bubblewrap's ``--die-with-parent`` reach only what stays in the
  group; a test that daemonised (forked, ``setsid``) and outlived the launcher is still in
  the run's network namespace, which ``--disable-userns`` keeps it from leaving.
"""

# The process table as /proc spells it: strings, links and descriptors.
# ruff: noqa: PTH115, PTH208

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from patchlane.errors import PatchlaneError

# The launcher, run by path (``python -I -S``): it imports nothing of patchlane.
LAUNCHER = Path(__file__).resolve().parent.parent / "child" / "launch.py"
# The first Landlock ABI with scopes (signals, abstract unix sockets): Linux 6.12.
SCOPES_ABI = 6
_SYS_CREATE_RULESET = 444
_CREATE_RULESET_VERSION = 1
# How long ``sweep`` keeps killing before it gives up on a process that forks faster.
SWEEP_S = 10.0


class ConfinementRefused(PatchlaneError):
    """The launcher could not put the test process's Landlock domain in force: the tests
    did not run (they never run unconfined)."""


@functools.cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none (or it is disabled)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0),
                               ctypes.c_uint32(_CREATE_RULESET_VERSION))  # fmt: skip
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))


def launcher_argv(python: str, status_fd: int, argv: list[str]) -> list[str]:
    """The command that runs ``argv`` under the launcher, which reports on ``status_fd``."""
    return [python, "-I", "-S", os.fspath(LAUNCHER), str(status_fd), "--", *argv]


@dataclass
class Launched:
    """The pipes of one run under the launcher: ``info_fd`` and ``status_fd`` are the
    write ends the child inherits (closed here once it started, ``started``)."""

    info_read: int
    info_fd: int
    status_read: int
    status_fd: int
    # bubblewrap's info as read so far, and the run's network namespace once it is known.
    info: bytes = b""
    net: int | None = None

    @classmethod
    def open(cls) -> Launched:
        """Make both pipes. Raises ``OSError`` when it cannot."""
        info_read, info_fd = os.pipe()
        try:
            status_read, status_fd = os.pipe()
        except OSError:
            os.close(info_read)
            os.close(info_fd)
            raise
        for fd in (info_read, status_read):
            os.set_blocking(fd, False)
        return cls(info_read, info_fd, status_read, status_fd)

    @property
    def pass_fds(self) -> tuple[int, int]:
        """The descriptors the child inherits."""
        return self.info_fd, self.status_fd

    def started(self) -> None:
        """Close the child's ends here (it has its own copies). Each descriptor is closed
        once (``-1`` after), so that a number another thread reuses is never closed."""
        _close(self.info_fd, self.status_fd)
        self.info_fd = self.status_fd = -1

    def net_namespace(self) -> int | None:
        """The run's network namespace (its inode), from bubblewrap's info; ``None`` when
        bubblewrap wrote none (it failed before it made one)."""
        if self.net is None and self.info_read >= 0:
            self.info += _read_all(self.info_read)
            try:
                value = json.loads(self.info.decode("utf-8")).get("net-namespace")
            except (ValueError, UnicodeDecodeError, AttributeError):
                return None
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                self.net = value
        return self.net

    def sweep(self) -> int:
        """Kill every process left in the run's network namespace (``sweep``); returns
        how many. Nothing when bubblewrap never made one."""
        net = self.net_namespace()
        return 0 if net is None else sweep(net)

    def refused(self) -> str | None:
        """Why the launcher refused to run the tests, or ``None`` when it did not say so
        (it confined itself, or it never ran: bubblewrap's own failure)."""
        said = _read_all(self.status_read) if self.status_read >= 0 else b""
        if said.startswith(b"0"):
            return said[1:].decode("utf-8", "replace").strip() or "no reason given"
        return None

    def close(self) -> None:
        """Close every descriptor still open (once)."""
        self.started()
        _close(self.info_read, self.status_read)
        self.info_read = self.status_read = -1


def _close(*fds: int) -> None:
    for fd in fds:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


def _read_all(fd: int) -> bytes:
    data = bytearray()
    while True:
        try:
            chunk = os.read(fd, 65536)
        except (BlockingIOError, OSError):
            break
        if not chunk:
            break
        data += chunk
    return bytes(data)


def sweep(net_inode: int, budget_s: float = SWEEP_S) -> int:
    """Kill (SIGKILL) every process on the host whose network namespace is ``net_inode``,
    round after round until none is left or ``budget_s`` has passed. Returns how many
    it killed. Each is signalled through a pidfd opened before its namespace is read, so a
    pid reused meanwhile is never signalled. Raises nothing."""
    target = f"net:[{net_inode}]"
    me, killed = os.getpid(), 0
    end = time.monotonic() + budget_s
    while time.monotonic() < end:
        found = 0
        for pid in _pids():
            if pid != me and _kill_if_in(pid, target):
                found += 1
        if not found:
            break
        killed += found
        time.sleep(0.005)  # the killed may not be dead yet: the next round looks again
    return killed


def members(net_inode: int) -> list[int]:
    """The live processes on the host whose network namespace is ``net_inode``."""
    target = f"net:[{net_inode}]"
    found = []
    for pid in _pids():
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/ns/net") == target:
                found.append(pid)
    return found


def _pids() -> list[int]:
    try:
        return [int(e) for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []


def _kill_if_in(pid: int, target: str) -> bool:
    """SIGKILL ``pid`` when its network namespace is ``target``; whether it was signalled.
    A zombie has no namespaces left: it is not found again."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return False
    try:
        if os.readlink(f"/proc/{pid}/ns/net") != target:
            return False
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        return False
    finally:
        os.close(pidfd)
    return True
