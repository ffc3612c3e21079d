"""The child's side of the result channel, shared by the collection and run children.

One JSON line per record on the descriptor the parent opened, each carrying the run's token;
a final ``{"done", "count"}`` line. The parent (``infra.process``) keeps only the
lines with the token and in order. Imports only the standard library: the children load it
before the repository is on ``sys.path``. A line is written through what this module captured
when it was imported (``encode``: the C JSON encoder; ``os.write``), so that code under test
that rebinds ``json`` or ``os`` cannot rewrite or drop it.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import json.encoder
import os
import re
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn

_MISSING = re.compile(r"No module named '([^']+)'")
LINE_LIMIT = 300


def _refuse(value: Any) -> Any:
    raise TypeError(f"not JSON: {type(value).__name__}")


def _joined(iterencode: Any, value: Any, _join: Callable[[Iterable[str]], str] = "".join) -> str:
    return _join(iterencode(value, 0))


def _encoder() -> Callable[[Any], str]:
    """Return an ASCII JSON encoder that looks nothing up when it runs: the C encoder made
    now (``json.dumps`` without the accelerator)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    escape = getattr(json.encoder, "c_encode_basestring_ascii", None)
    if make is None or escape is None:  # pragma: no cover - CPython has the C encoder
        return functools.partial(json.dumps, ensure_ascii=True)
    return functools.partial(
        _joined, make(None, _refuse, escape, None, ": ", ", ", False, False, True)
    )


encode: Callable[[Any], str] = _encoder()
"""One value as a line of ASCII JSON (``json.dumps(value, ensure_ascii=True)``)."""


class ResultWriter:
    """Writes records to the result descriptor, each with the token."""

    def __init__(self, fd: int, token: str) -> None:
        self.fd = fd
        self.token = token
        self.count = 0

    def emit(self, record: Mapping[str, object]) -> None:
        """Send one record (counted for the final line)."""
        self.count += 1
        self._write({**record, "token": self.token})

    def emit_all(self, records: Iterable[Mapping[str, object]]) -> None:
        """Send ``records`` (each counted) in one write."""
        lines: list[dict[str, object]] = []
        for record in records:
            self.count += 1
            lines.append({**record, "token": self.token})
        self._write_all(lines)

    def done(self) -> None:
        """Send the final line: how many records came before it."""
        self._write({"done": True, "count": self.count, "token": self.token})

    def finish(self) -> NoReturn:
        """Send the final line and end the process at once: ``os._exit``, so nothing the
        project registered (``atexit`` handlers, finalisers) runs after the last line."""
        self.done()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    def _write(
        self,
        record: Mapping[str, object],
        _encode: Callable[[Any], str] = encode,
        _os_write: Callable[[int, bytes], int] = os.write,
    ) -> None:
        data = (_encode(record) + "\n").encode("ascii")
        while data:
            data = data[_os_write(self.fd, data) :]

    def _write_all(
        self,
        records: list[dict[str, object]],
        _encode: Callable[[Any], str] = encode,
        _os_write: Callable[[int, bytes], int] = os.write,
    ) -> None:
        data = "".join([_encode(r) + "\n" for r in records]).encode("ascii")
        while data:
            data = data[_os_write(self.fd, data) :]


def without_xdist() -> list[str]:
    """pytest options that keep xdist (when installed) from distributing the run: its
    controller holds no items, and its workers would not load patchlane's plugin."""
    return ["-n0"] if importlib.util.find_spec("xdist") is not None else []


def last_line(text: str) -> str:
    """The last non-blank line of ``text``, cut to a bounded length (a reason, not a log)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[-1] if lines else "")[:LINE_LIMIT]


def failure_line(crash: str | None, text: str) -> str:
    """The one line a failed report is told by: the first line of pytest's crash message
    (``reprcrash.message``: ``assert 2 == 3``, ``ValueError: bad``) with pytest's last line
    of the report after it in brackets (``tests/test_x.py:5: AssertionError``: where it
    failed), or the last line alone when there is no crash message. Bounded in length."""
    last = last_line(text)
    first = next((line.strip() for line in (crash or "").splitlines() if line.strip()), "")
    if not first or first in last:
        return last
    return (f"{first} ({last})" if last else first)[:LINE_LIMIT]


def hide_drawn_seed() -> None:
    """Remove ``PYTHONHASHSEED`` and ``PATCHLANE_SEED`` from this process's environment
    (the drawn value already took effect at start-up): what a test reads there is then what a
    plain ``pytest`` run gives it, and its own children hash as theirs would. Both children
    (collection and run) call it before pytest starts."""
    os.environ.pop("PYTHONHASHSEED", None)
    os.environ.pop("PATCHLANE_SEED", None)
    erase_startup_entry(b"PYTHONHASHSEED")


def erase_startup_entry(name: bytes) -> bool:
    """Blank ``name``'s entry in this process's start-up environment block, which
    ``/proc/self/environ`` shows whatever ``os.environ`` holds now, when it is the block's
    last entry (the parent puts the drawn seed last: ``run.plain_env``); return whether it
    did. Only the last entry: the C library's ``environ`` still points at every other
    string of the block, so nothing before it may move. What remains is NUL bytes where the
    entry was (a declared difference of the fingerprint). Never raises."""
    try:
        with open("/proc/self/stat", "rb") as f:  # noqa: PTH123 - stdlib only, child side
            stat = f.read()
        # proc(5): env_start and env_end are fields 50 and 51, counted from 1; after the
        # command name (field 2, in parentheses, which may hold spaces) comes field 3.
        fields = stat[stat.rindex(b")") + 2 :].split()
        start, end = int(fields[47]), int(fields[48])
        with open("/proc/self/environ", "rb") as f:  # noqa: PTH123
            block = f.read()
    except (OSError, ValueError, IndexError):
        return False
    entries = block.split(b"\0")
    if len(block) != end - start or len(entries) < 2 or entries[-1]:
        return False
    last = entries[-2]
    if not last.startswith(name + b"="):
        return False
    # The block lies in this process's own (writable) stack: written in place, not
    # through ``/proc/self/mem``, which a replay on the host's process table sees on a
    # read-only ``/proc`` (docs/explanation/decisions/0032-host-process-table.md). Read
    # back first: only the bytes ``/proc/self/environ`` showed are ever overwritten.
    import ctypes

    where = end - len(last) - 1
    try:
        if ctypes.string_at(where, len(last)) != last:
            return False
        ctypes.memset(where, 0, len(last))
    except (OSError, ValueError):
        return False
    return True


def collect_error(nodeid: str, text: str) -> dict[str, object]:
    """The record of a file pytest could not collect: its id, pytest's last line and the
    module ``No module named`` names, if that was the error."""
    missing = _MISSING.search(text)
    return {
        "nodeid": nodeid,
        "message": last_line(text) or "collection error",
        "missing": missing.group(1) if missing else None,
    }


def _below(file: object, root: str) -> str | None:
    if not isinstance(file, str):
        return None
    rel = os.path.relpath(os.path.abspath(file), root)  # noqa: PTH100 - lexical
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return None
    return rel.replace(os.sep, "/")


def tree_plugins(pluginmanager: Any, root: str) -> list[str]:
    """Return the files below ``root`` (repository-relative, sorted) that pytest's plugin
    manager runs code from: the modules it holds as plugins (conftests, modules named by
    ``pytest_plugins`` or ``-p``, the modules of plugin objects registered at run time) and
    the file of every hook implementation's code (a hook that code under test slipped into
    an unchanged conftest's namespace still has its code in the file it came from).

    What pytest actually loaded, for the parent to compare with what classify found
    statically. Never raises: the plugin manager is in the patch's process.
    """
    found: set[str] = set()
    try:
        plugins = list(pluginmanager.get_plugins())
        callers = list(vars(pluginmanager.hook).values())
    except Exception:  # noqa: BLE001 - the project may have broken it: report what we can
        return []
    for plugin in plugins:
        module = plugin if isinstance(plugin, types.ModuleType) else None
        if module is None:
            module = sys.modules.get(getattr(type(plugin), "__module__", "") or "")
        rel = _below(getattr(module, "__file__", None), root) if module is not None else None
        if rel is not None:
            found.add(rel)
    for caller in callers:
        try:
            impls = caller.get_hookimpls()
        except Exception:  # noqa: BLE001, S112 - not a hook caller
            continue
        for impl in impls:
            rel = _hook_file(impl, root)
            if rel is not None:
                found.add(rel)
    return sorted(found)


def _hook_file(impl: Any, root: str) -> str | None:
    try:
        function: Any = getattr(impl, "function", None)
        for _ in range(100):  # a __wrapped__ chain may loop
            if not hasattr(function, "__wrapped__"):
                break
            function = function.__wrapped__
        code = getattr(function, "__code__", None)
        return _below(getattr(code, "co_filename", None), root)
    except Exception:  # noqa: BLE001 - hostile attributes: what cannot be read is skipped
        return None
