"""The in-child guard: an audit hook that blocks network and process creation.

It is always installed, whether or not the child also runs in its own network namespace
(``unshare``): Python offers no way to remove an audit hook once added. Every blocked
attempt is also *recorded*, so that code under test which catches the exception and
carries on cannot make a property pass silently: the child reports the property as a
``sandbox`` error.

When the job names ``guarded`` directories (the folders of patchlane's cache directory that
hold the property results and dependency maps later runs reuse), every write into one of
them (a file opened for writing, a rename, link, removal, ...) is blocked and recorded the
same way, so that a patch's code cannot leave a result or a map for a later patch without
failing its own properties.

This is a guard against accidents and casual escapes, not a security boundary against
code written to defeat it: code under test runs in the same interpreter (see
docs/explanation/decisions/0004-sandbox.md). Its companion ``integrity`` catches
the other in-process route, rebinding what properties rely on (``random``, ``hashlib``,
builtins, Hypothesis, patchlane's own modules); the ``ctypes`` events blocked here are what
keeps that check from being bypassed by loading C code.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from patchlane.child.reads import WRITE_EVENTS, WRITE_FLAGS

# Audit events (https://docs.python.org/3/library/audit_events.html) that reach the
# network or start a process. ``os.spawn*`` go through ``os.fork``/``os.exec``, the
# ``pty`` helpers through ``os.forkpty``.
BLOCKED_EVENTS = frozenset(
    {
        "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg",
        "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr",
        "socket.getnameinfo",
        "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
        "os.fork", "os.forkpty", "os.killpg",
        "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle",
    }
)  # fmt: skip
# ``_posixsubprocess.fork_exec`` raises no audit event of its own: the module attribute is
# replaced below, and importing the module afresh is refused. The child imports
# ``subprocess`` and ``ctypes`` before the hook, so that code which merely imports them
# (numpy imports ctypes) still works; what they can reach (Popen, new libraries, C symbols)
# stays blocked.
BLOCKED_IMPORTS = frozenset({"_posixsubprocess"})


class SandboxViolation(RuntimeError):
    """Raised inside the child when code tries something the property lane forbids."""


def _describe(event: str, args: tuple[Any, ...]) -> str:
    try:
        shown = ", ".join(_short(a) for a in args[:2])
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not break the guard
        shown = "..."
    return f"{event}({shown})"


def _short(value: Any) -> str:
    if isinstance(value, str | bytes | int | float | tuple | list | type(None)):
        text = repr(value)
    else:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 120 else text[:117] + "..."


def install(violations: list[str], guarded: Sequence[str] = ()) -> None:
    """Add the audit hook (forever) and disable ``_posixsubprocess.fork_exec``.

    Each blocked attempt appends one line to ``violations`` and raises
    ``SandboxViolation``. ``os.kill`` is allowed on the child itself only. Writes below a
    ``guarded`` directory are blocked (see the module docstring).
    """
    own_pid = os.getpid()
    blocked = BLOCKED_EVENTS
    blocked_imports = BLOCKED_IMPORTS
    guard = _Guard(guarded)
    # Only these events can write; checked first, since the hook sees every audit event.
    writes = frozenset({"open", *WRITE_EVENTS}) if guard.dirs else frozenset()

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in blocked or (event == "os.kill" and args and args[0] not in (own_pid, 0)):
            detail = _describe(event, args)
        elif event == "import" and args and args[0] in blocked_imports:
            detail = f"import {args[0]}"
        elif event in writes and (into := guard.written(event, args)) is not None:
            detail = f"{event}({_short(into)}): a write into patchlane's cache"
        else:
            return
        violations.append(detail)
        raise SandboxViolation(f"blocked by patchlane's property sandbox: {detail}")

    sys.addaudithook(hook)
    _disable_fork_exec(violations)


class _Guard:
    """Which writes land in a guarded directory (by the path as given and as resolved)."""

    def __init__(self, guarded: Sequence[str]) -> None:
        # As given and as resolved: a cache reached through a link is the same cache.
        self.dirs = tuple({*guarded, *(os.path.realpath(d) for d in guarded)})
        self._getcwd = os.getcwd
        self._realpath = os.path.realpath
        self._normpath = os.path.normpath

    def written(self, event: str, args: tuple[Any, ...]) -> str | None:
        """Return the guarded path that ``event`` writes, or ``None``."""
        if event == "open":
            path, _mode, flags = (*args, None, None, None)[:3]
            wanted = [path] if not isinstance(flags, int) or flags & WRITE_FLAGS else []
        elif event in WRITE_EVENTS:
            wanted = [args[i] for i in WRITE_EVENTS[event][0] if i < len(args)]
        else:
            return None
        for path in wanted:
            if isinstance(path, str | bytes) and self._inside(os.fsdecode(path)):
                return os.fsdecode(path)
        return None

    def _inside(self, path: str) -> bool:
        try:
            if not path.startswith("/"):
                path = f"{self._getcwd()}/{path}"
            places = {self._normpath(path), self._realpath(path)}
        except (OSError, ValueError):
            return False
        return any(_below(p, d) for p in places for d in self.dirs)


def _below(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _disable_fork_exec(violations: list[str]) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        violations.append("_posixsubprocess.fork_exec")
        raise SandboxViolation(
            "blocked by patchlane's property sandbox: _posixsubprocess.fork_exec"
        )

    module = sys.modules.get("_posixsubprocess")
    if module is not None:
        setattr(module, "fork_exec", refuse)  # noqa: B010 - no stub knows this attribute
    subprocess_module = sys.modules.get("subprocess")
    if subprocess_module is not None and hasattr(subprocess_module, "_fork_exec"):
        setattr(subprocess_module, "_fork_exec", refuse)  # noqa: B010


def take(violations: list[str]) -> list[str]:
    """Return the violations recorded so far and forget them."""
    taken = list(violations)
    del violations[:]
    return taken
