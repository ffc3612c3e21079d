"""The values an input's fields hold, as its readers name and check them: the path to a
value (``FieldPath``), how a message names a value's kind (``kind_of``), a calendar date, the
checks a string field may make (``printable``, ``non_blank``), and how a field is named
(``dotted_name``). Split from ``inputs.fields`` (which re-exports each name), importing only
the standard library, ``patchlane.errors`` and ``inputs.jsonio``.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from datetime import date, datetime
from typing import Any, Literal

from patchlane.errors import InputError
from patchlane.inputs.jsonio import dotted

# How much of a string value an error message quotes.
SHOWN_CHARS = 80

# A path to a value inside a parsed document: mapping keys and list indexes, outermost first.
FieldPath = tuple[str | int, ...]
# Where a reader looks below itself: one key, one index, or a path.
At = str | int | FieldPath
# What a document raises: an ``InputError`` subclass, or anything called like one.
ErrorClass = Callable[[str, str, int | None], InputError]


class _Missing(enum.Enum):
    MISSING = enum.auto()


# The ``default`` of a getter that was given none: the field is then required.
MISSING: Literal[_Missing.MISSING] = _Missing.MISSING

_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")


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


def calendar_date(value: Any) -> date | None:
    """Return the calendar date ``value`` names, or ``None`` when it names none.

    Accepts a YAML date (``expires: 2026-10-08``) and the exact text ``YYYY-MM-DD``
    (``"2026-10-08"``). A timestamp, ``2026-02-30``, ``20261008`` or ``next week`` is none.
    """
    if isinstance(value, datetime):  # a datetime is a date too; a day is asked for
        return None
    if isinstance(value, date):
        return value
    if isinstance(value, str) and _DATE_RE.match(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            return None
    return None


# --- what a string field may hold (the ``accept`` of ``Fields.text`` and ``text_list``) ---


def non_blank(value: str) -> bool:
    """Return whether ``value`` holds something besides white space."""
    return bool(value.strip())


def printable(value: str) -> bool:
    """Return whether ``value`` is non-empty and fits one terminal line: no line break,
    control character or lone surrogate (``"\\udcXX"`` in JSON)."""
    return bool(value) and value.isprintable()


def printable_non_blank(value: str) -> bool:
    """Return whether ``value`` is ``printable`` and not only white space."""
    return bool(value.strip()) and value.isprintable()


def dotted_name(path: FieldPath) -> str:
    """Return how a field is named in most inputs' messages: ``lanes.fixture.roots[0].lock``
    (keys joined by ``.``, indexes in brackets), or ``(top level)`` for the document."""
    return dotted(path) or "(top level)"


def shown(value: float) -> str:
    """Return ``value`` for a message: a number of more than 20 digits is elided (a hostile
    file's 4000-digit integer must not become a 4000-character line)."""
    text = str(value)
    return text if len(text) <= 20 else f"{text[:8]}...({len(text)} digits)"
