"""Shared pieces of input validation: naming a value's kind, decoding, reading from git.

Every input (the map, a lock, the freeze registry) has its own error class so that its
messages start with its file name; these helpers take that class as an argument.
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Any

from patchlane import git
from patchlane.errors import InputError

# How much of a string value an error message quotes.
SHOWN_CHARS = 80


def kind_of(value: Any, *, json: bool = False) -> str:
    """Return how an error message should name ``value``'s kind ("a string ('x')", ...).

    ``json`` words it for JSON input ("an object", "null") instead of YAML ("a mapping").
    A string longer than ``SHOWN_CHARS`` is cut (with its length said): the value is the
    input's, and a megabyte-long one must not become a megabyte-long error line.
    """
    if value is None:
        return "null" if json else "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower() if json else value})"
    if isinstance(value, int | float):
        text = str(value)  # an int read from JSON or YAML has at most 4300 digits
        if len(text) > 24:
            text = f"{text[:12]}... of {len(text)} characters"
        return f"a number ({text})"
    if isinstance(value, datetime):
        return f"a timestamp ({value.isoformat()})"
    if isinstance(value, date):
        return f"a date ({value.isoformat()})"
    if isinstance(value, str):
        if len(value) > SHOWN_CHARS:
            return f"a string ({value[:SHOWN_CHARS]!r}... of {len(value)} characters)"
        return f"a string ({value!r})" if json or value.strip() else "an empty string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object" if json else "a mapping"
    return type(value).__name__


def decode_utf8(data: bytes, label: str, error: type[InputError]) -> str:
    """Return ``data`` as UTF-8 text. Raises ``error`` naming the line of the bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise error(label, f"not UTF-8 (byte {e.start})", line) from e


def read_committed_text(
    repo: Path, commit: str, rel: str, error: type[InputError], where: str
) -> str | None:
    """Return the text of the regular file ``rel`` in ``commit``; ``None`` when absent.

    Raises ``error`` (ending with ``where``, e.g. "(the map in base abc123)") for a symlink
    or submodule entry, which is never followed, or for bytes that are not UTF-8.
    """
    found = git.read_file_at(repo, commit, rel)
    if found is None:
        return None
    entry, data = found
    if entry.mode not in git.REGULAR_MODES:
        raise error(rel, f"not a regular file (a symlink or submodule is never followed) {where}")
    try:
        return decode_utf8(data, rel, error)
    except InputError as e:
        raise error(e.file, f"{e.message} {where}", e.line) from e
