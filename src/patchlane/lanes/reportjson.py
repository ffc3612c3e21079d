"""Reading lane reports back from JSON, strictly: one typed getter per field.

A report read back (by ``patchlane verdict`` and ``review``, the freeze audit's command, the
pytest plugin, the receipt's verifier) may have been written or edited by anyone, so every
value is checked before it is believed. A parser walks the JSON with ``Obj`` and raises
``Malformed`` at the first value that is not what the format says; ``parse`` and ``read``
turn that into a ``ReportError`` naming the file and, when the text is known, the line.

Besides the standard library it imports only ``patchlane.errors``, ``patchlane.lanes.status``
and ``patchlane.inputs.jsonio``: the pytest plugin reads freeze reports with this inside
pytest children, before the repository's code, and must stay cheap to load.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TypeVar

from patchlane.errors import ReportError
from patchlane.inputs.jsonio import JsonPath, dotted, line_for, parse_json_bytes, read_file_bytes
from patchlane.lanes.status import Status

__all__ = ["JsonPath", "Malformed", "Obj", "envelope", "parse", "read", "review_events", "show"]

T = TypeVar("T")

_MISSING = object()


class Malformed(Exception):
    """A report's value at ``where`` (a JSON path) is not what the format says."""

    def __init__(self, where: JsonPath, message: str) -> None:
        super().__init__(message)
        self.where = where
        self.message = message


def show(value: object) -> str:
    """Render a JSON value for a one-line message: JSON text, ASCII, cut short."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):  # not JSON data at all (a caller's bug, or a NaN)
        text = ascii(value)
    return text if len(text) <= 40 else text[:37] + "..."


def parse(value: object, label: str, parser: Callable[[object], T], text: str | None = None) -> T:
    """Return ``parser(value)``.

    Raises ``ReportError`` naming ``label`` (and the line, when ``text`` is the JSON text
    ``value`` was parsed from) when the parser finds a malformed value.
    """
    try:
        return parser(value)
    except Malformed as e:
        # The line is found by a second, position-recording pass: paid only on bad input.
        line = None if text is None else line_for(text, e.where)
        raise ReportError(label, e.message, line) from None


def parse_bytes(data: bytes, label: str, parser: Callable[[object], T]) -> T:
    """Decode ``data`` (UTF-8), parse it as strict JSON and return ``parser(value)``.

    Raises ``ReportError`` naming ``label`` and, where there is one, the line: for bytes
    that are not UTF-8, text that is not strict JSON (duplicate keys included), or a value
    the parser refuses.
    """
    value, text = parse_json_bytes(data, label, ReportError)
    return parse(value, label, parser, text)


def read(path: Path, label: str | None, parser: Callable[[object], T]) -> T:
    """Read the report file ``path`` and return ``parser`` of its JSON value.

    ``label`` names the file in messages (default: ``path`` as given). Raises
    ``ReportError`` when it cannot be read, and as ``parse_bytes`` does.
    """
    name = os.fspath(path) if label is None else label
    return parse_bytes(read_file_bytes(path, name, ReportError), name, parser)


def envelope(value: object, lane: str) -> tuple[Obj, Status, str]:
    """Check what every lane report has: a JSON object of ``lane`` with a ``status`` and a
    ``reason`` (and, when present, ``not_built`` a boolean: written by early versions for a
    lane not yet built, and ignored since every lane exists).

    Returns the object, its status and its reason. Raises ``Malformed`` otherwise.
    """
    if not isinstance(value, dict):
        raise Malformed((), "expected a JSON object")
    if value.get("lane") != lane:
        raise Malformed(("lane",), f"'lane' is {value.get('lane')!r}, expected {lane!r}")
    status = value.get("status")
    if status not in tuple(Status) or not isinstance(status, str):
        names = sorted(s.value for s in Status)
        raise Malformed(("status",), f"'status' is {status!r}, expected one of {names}")
    reason = value.get("reason")
    if not isinstance(reason, str):
        raise Malformed(("reason",), "'reason' must be a string")
    if not isinstance(value.get("not_built", False), bool):
        raise Malformed(("not_built",), "'not_built' must be true or false")
    return Obj(value), Status(status), reason


def review_events(top: Obj) -> tuple[str, ...]:
    """Return a report's ``review_events`` (none when absent): each keeps the verdict at
    ``undecided``, whichever lane's report carries it. Raises ``Malformed``."""
    events = top.data.get("review_events", [])
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        raise Malformed(("review_events",), "'review_events' must be a list of strings")
    return tuple(events)


class Obj:
    """A JSON object being read; each getter checks one key and names its path when the
    value is wrong. A getter given a ``default`` returns it when the key is absent; without
    one (``None``) the key is required."""

    def __init__(self, value: object, where: JsonPath = (), what: str = "") -> None:
        if not isinstance(value, dict):
            name = what or (f"'{dotted(where)}'" if where else "the report")
            raise Malformed(where, f"{name} must be a JSON object, not {show(value)}")
        self.data: dict[str, object] = value
        self.where = where

    def at(self, key: str) -> JsonPath:
        """Return the JSON path of ``key`` in this object."""
        return (*self.where, key)

    def has(self, key: str) -> bool:
        """Return whether the object has ``key``."""
        return key in self.data

    def fail(self, key: str, expected: str) -> Malformed:
        """Return the error for ``key`` whose value is not ``expected`` (or is missing)."""
        value = self.data.get(key, _MISSING)
        got = " (it is missing)" if value is _MISSING else f", not {show(value)}"
        return Malformed(self.at(key), f"'{dotted(self.at(key))}' must be {expected}{got}")

    def _get(self, key: str, default: object) -> object:
        if key in self.data:
            return self.data[key]
        if default is None:
            raise self.fail(key, "present")
        return default

    def string(self, key: str, default: str | None = None) -> str:
        """A string (any, empty included)."""
        value = self._get(key, default)
        if not isinstance(value, str):
            raise self.fail(key, "a string")
        return value

    def opt_string(self, key: str) -> str | None:
        """A string or ``null``; absent is ``None``."""
        value = self.data.get(key)
        if value is not None and not isinstance(value, str):
            raise self.fail(key, "a string or null")
        return value

    def integer(self, key: str, default: int | None = None, minimum: int | None = None) -> int:
        """An integer (``true`` is not one), at least ``minimum``."""
        value = self._get(key, default)
        # bool is an int in Python, but true is not a number in a report.
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(key, "an integer")
        if minimum is not None and value < minimum:
            raise self.fail(key, f"an integer of at least {minimum}")
        return value

    def opt_integer(
        self, key: str, minimum: int | None = None, *, required: bool = False
    ) -> int | None:
        """An integer or ``null``; absent is ``None`` unless ``required``."""
        if required and key not in self.data:
            raise self.fail(key, "an integer or null")
        if self.data.get(key) is None:
            return None
        return self.integer(key, minimum=minimum)

    def number(self, key: str, default: float | None = None) -> float:
        """A number (integer or not)."""
        value = self._get(key, default)
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise self.fail(key, "a number")
        return value

    def boolean(self, key: str, default: bool | None = None) -> bool:
        """``true`` or ``false``."""
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, "true or false")
        return value

    def choice(self, key: str, choices: Collection[str], default: str | None = None) -> str:
        """One of ``choices``."""
        value = self._get(key, default)
        if value not in choices or not isinstance(value, str):
            raise self.fail(key, "one of " + ", ".join(choices))
        return value

    def strings(self, key: str, default: tuple[str, ...] | None = None) -> tuple[str, ...]:
        """A list of strings."""
        value = self._get(key, default)
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, "a list of strings")
        return tuple(value)

    def items(self, key: str, default: tuple[()] | None = None) -> list[tuple[JsonPath, object]]:
        """A list; returns each item with its JSON path."""
        value = self._get(key, default)
        if not isinstance(value, list | tuple):
            raise self.fail(key, "a list")
        return [((*self.at(key), i), item) for i, item in enumerate(value)]

    def objects(self, key: str, default: tuple[()] | None = None) -> list[Obj]:
        """A list of JSON objects."""
        return [Obj(item, where) for where, item in self.items(key, default)]

    def raw(self, key: str) -> object:
        """Any JSON value; the key is required."""
        return self._get(key, None)

    def obj(self, key: str) -> Obj:
        """A JSON object."""
        return Obj(self._get(key, None), self.at(key))
