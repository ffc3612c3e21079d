"""The child's side of the result channel, shared by the collection and run children.

One JSON line per record on the descriptor the parent opened, each carrying the run's token;
a final ``{"done", "count"}`` line. The parent (``lanes.property.process``) keeps only the
lines with the token and in order. Imports only the standard library: the children load it
before the repository is on ``sys.path``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import types
from collections.abc import Iterable
from typing import Any, NoReturn

_MISSING = re.compile(r"No module named '([^']+)'")
LINE_LIMIT = 300


class ResultWriter:
    """Writes records to the result descriptor, each with the token."""

    def __init__(self, fd: int, token: str) -> None:
        self.fd = fd
        self.token = token
        self.count = 0

    def emit(self, record: dict[str, Any]) -> None:
        """Send one record (counted for the final line)."""
        self.count += 1
        self._write({**record, "token": self.token})

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

    def _write(self, record: dict[str, Any]) -> None:
        data = (json.dumps(record, ensure_ascii=True) + "\n").encode("ascii")
        while data:
            data = data[os.write(self.fd, data) :]


def without_xdist() -> list[str]:
    """pytest options that keep xdist (when installed) from distributing the run: its
    controller holds no items, and its workers would not load patchlane's plugin."""
    return ["-n0"] if importlib.util.find_spec("xdist") is not None else []


def last_line(text: str) -> str:
    """The last non-blank line of ``text``, cut to a bounded length (a reason, not a log)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[-1] if lines else "")[:LINE_LIMIT]


def collect_error(nodeid: str, text: str) -> dict[str, Any]:
    """The record of a file pytest could not collect: its id, pytest's last line and the
    module ``No module named`` names, if that was the error."""
    missing = _MISSING.search(text)
    return {
        "nodeid": nodeid,
        "message": last_line(text) or "collection error",
        "missing": missing.group(1) if missing else None,
    }


def tree_plugins(plugins: Iterable[object], root: str) -> list[str]:
    """Return the files below ``root`` (repository-relative, sorted) whose modules pytest
    holds as plugins: conftests, modules named by ``pytest_plugins`` or ``-p``, and the
    modules of plugin objects registered at run time.

    What pytest actually loaded, for the parent to compare with what classify found
    statically (a plugin named by a computed string escapes the static rules).
    """
    found: set[str] = set()
    for plugin in plugins:
        module = plugin if isinstance(plugin, types.ModuleType) else None
        if module is None:
            module = sys.modules.get(getattr(type(plugin), "__module__", "") or "")
        file = getattr(module, "__file__", None) if module is not None else None
        if not isinstance(file, str):
            continue
        rel = os.path.relpath(os.path.abspath(file), root)  # noqa: PTH100 - lexical
        if rel != os.pardir and not rel.startswith(os.pardir + os.sep):
            found.add(rel.replace(os.sep, "/"))
    return sorted(found)
