"""Whether a process started while a module was imported can run the project's Python code
(docs/architecture.md §4, "Blind at import").

The recorder (``child.recorder``) asks it of every process start outside every test.
A start that cannot run the project's code blinds nothing: ``ldconfig -p`` from
``ctypes.util.find_library``, ``uname``, ``git --version``. Everything else it cannot vouch
for blinds the tests that imported the module (``lanes.replay.importblind``). Only the
base's trusted code runs here; the rule is about what a program can reach, not about who
wrote it.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from typing import Any

# Events whose arguments carry the program and its argv; any other start (``os.system``'s
# shell line, ``os.fork``'s copy of this very interpreter) may run the project's code.
_PROGRAM_EVENTS = frozenset({"subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn"})
_SHEBANG_LIMIT = 256


def harmless_start(
    event: str, args: tuple[Any, ...], root: str, rel: Callable[[object], str | None]
) -> bool:
    """Return whether the process start ``event`` (an audit event and its ``args``) cannot
    run the project's Python code: its program is known, lies outside the tree, is no
    Python interpreter (not ``sys.executable``, no ``python*`` name, no ``#!`` line naming
    one), and no argument names a path of the tree (``rel`` maps a path to the tree's
    relative path, or ``None`` outside it), mentions Python or the tree's location ``root``. Raises
    nothing."""
    if event not in _PROGRAM_EVENTS:
        return False
    program, argv, cwd = _program(event, args)
    if program is None or argv is None:
        return False
    found = _resolve(program, cwd)
    if found is None or rel(found) is not None or _is_python(found):
        return False
    return not any(_names_python_or_tree(a, cwd, root, rel) for a in argv)


def _program(event: str, args: tuple[Any, ...]) -> tuple[str | None, list[str] | None, str]:
    """The program, its argv and the cwd a start names (``None`` where they are not text)."""
    cwd = os.getcwd()  # noqa: PTH109 - str in, str out
    if event == "subprocess.Popen":
        executable, argv = (*args, None, None)[:2]
        where = args[2] if len(args) > 2 else None
        cwd = _text(where) or cwd
    elif event == "os.spawn":
        executable, argv = (*args, None, None, None)[1:3]
    else:  # os.exec, os.posix_spawn: (path, argv, env)
        executable, argv = (*args, None, None)[:2]
    if isinstance(argv, str | bytes | os.PathLike):
        argv = [argv]
    texts = [_text(a) for a in argv] if isinstance(argv, list | tuple) else None
    if texts is None or any(t is None for t in texts):
        return None, None, cwd
    program = _text(executable) if executable is not None else (texts[0] if texts else None)
    return program, [t for t in texts if t is not None], cwd


def _text(value: object) -> str | None:
    if isinstance(value, bytes):
        return os.fsdecode(value)
    if isinstance(value, os.PathLike):
        path = os.fspath(value)
        return os.fsdecode(path) if isinstance(path, bytes) else str(path)
    return value if isinstance(value, str) else None


def _resolve(program: str, cwd: str) -> str | None:
    """The file ``program`` runs (a name is looked up on ``PATH``), or ``None``."""
    if os.sep in program:
        path = os.path.join(cwd, program)  # noqa: PTH118 - str in, str out
        return os.path.realpath(path) if os.path.isfile(path) else None  # noqa: PTH113
    found = shutil.which(program)
    return os.path.realpath(found) if found else None


# Programs that run what they read from their arguments, their input or their working
# directory (the tree, during a recording): a shell's ``-c make``, a Makefile, a tox.ini.
_RUNNERS = frozenset(
    {"sh", "bash", "dash", "zsh", "ksh", "csh", "tcsh", "fish", "busybox", "env", "xargs",
     "make", "gmake", "cmake", "ninja", "meson", "tox", "nox", "pip", "pip3", "uv", "hatch",
     "pytest", "perl", "ruby", "node", "nodejs", "java", "sudo", "nice", "timeout", "nohup"}
)  # fmt: skip


def _is_python(path: str) -> bool:
    """Whether ``path`` is a Python interpreter or a script one runs (its ``#!`` line), or a
    program that runs what it reads (``_RUNNERS``: a shell, a build tool)."""
    name = path.rsplit(os.sep, 1)[-1]
    if path == os.path.realpath(sys.executable) or _pythonish(name) or name in _RUNNERS:
        return True
    try:
        with open(path, "rb") as f:  # noqa: PTH123 - one bounded read
            head = f.read(_SHEBANG_LIMIT)
    except OSError:
        return True  # cannot tell: it may be one
    if not head.startswith(b"#!"):
        return False
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").lower()
    # ``#!/usr/bin/env python3``, ``#!/venv/bin/python``: a console script.
    return "python" in line or "pypy" in line


def _pythonish(name: str) -> bool:
    low = name.lower()
    return low.startswith(("python", "pypy")) or low in ("pytest", "py.test", "pip", "uv")


def _names_python_or_tree(
    arg: str, cwd: str, root: str, rel: Callable[[object], str | None]
) -> bool:
    """Whether an argument mentions Python, or names (alone or after ``=``) an existing path
    of the tree, or holds the tree's own location."""
    low = arg.lower()
    if "python" in low or "pypy" in low:
        return True
    if root in arg:
        return True
    for part in {arg, arg.rsplit("=", 1)[-1]}:
        path = os.path.join(cwd, part) if part else ""  # noqa: PTH118 - str in, str out
        if path and os.path.lexists(path) and rel(path) is not None:
            return True
    return False
