"""Typed, path-aware reading of parsed input files, and the pieces every input shares.

Every input (the review map, a fixture lock, the freeze registry, a receipt, a lane report,
the verdict) is parsed into plain values first (``jsonio.parse_json_text``,
``yamlio.load_yaml``), then read field by field with a ``Fields`` reader, the one reader
every parser uses. A reader knows four things about its file, kept in a ``Document``: the
label to name it by, the ``InputError`` subclass to raise (so that each input's messages
start with its own file name; ``ReportError`` for a report), how to find the line of a value
from its path (``jsonio.line_for`` for JSON, the key and item lines ``YamlMap``/``YamlList``
keep for YAML), and how its messages are worded. They read ``FILE:LINE: FIELD: what is
wrong``, where the document decides how FIELD is written (``lanes.fixture.roots[0].lock`` by
default, see ``dotted_name``) and, through its ``Wording``, how a refusal reads.

Reading a JSON file::

    value = parse_json_text(text, label, ReportError)
    doc = json_document(text, label, ReportError)
    if not isinstance(value, dict):
        raise doc.fail((), f"expected an object, got {doc.kind(value)}")
    top = doc.fields(value).only(("lane", "status", "records"))
    status = top.choice("status", ("pass", "fail"))
    for record in top.items("records", expected="a list of records", item="an object"):
        expires = record.date("expires", default=None)  # ``datetime.date`` or None

The typed getters (``text``, ``string``, ``integer``, ``number``, ``boolean``, ``choice``,
``date``, ``text_list``, ``mapping``, ``sequence``, ``element``, ``items``) refuse a value
of the wrong type with ``FIELD: expected WHAT, got KIND`` (``kind_of``), WHAT being theirs
to word; a document with another ``Wording`` words the same refusals its own way (the lane
reports: ``'FIELD' must be WHAT, not VALUE``, see ``formats.envelope``). A message no getter
words (``'in_play' is true but 'failed_rules' is [5]``) is raised with the primitives:
``has``, ``get``, ``line``, ``name``, ``fail`` (``FIELD: message``) and
``Document.error_at`` (a message with no field name in front), which keep the file, the
line lookup and the error class in one place.

The line of a path is found only when an error is raised: for JSON that is a second,
position-recording pass over the text, which well-formed input never pays for.

Besides the standard library this module imports only ``patchlane.errors``,
``inputs.jsonio`` and its own parts (``inputs.values``, ``inputs.wording``, ``inputs.listed``;
YAML only inside ``yaml_document``): the pytest plugin reads the freeze report with it inside
pytest children, where every module loaded is paid for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal, TypeVar, overload

from patchlane.errors import InputError
from patchlane.inputs.jsonio import line_for

# Re-exported: every reader imports these from here.
from patchlane.inputs.listed import CollectionGetters
from patchlane.inputs.values import (
    MISSING,
    SHOWN_CHARS,
    At,
    ErrorClass,
    FieldPath,
    calendar_date,
    dotted_name,
    kind_of,
    non_blank,
    printable,
    printable_non_blank,
)
from patchlane.inputs.wording import FIELD_WORDING, Wording

__all__ = [
    "FIELD_WORDING", "SHOWN_CHARS", "At", "Document", "ErrorClass", "FieldPath", "Fields",
    "Wording", "calendar_date", "dotted_name", "json_document", "kind_of", "non_blank",
    "printable", "printable_non_blank", "yaml_document",
]  # fmt: skip

D = TypeVar("D")


def _path(at: At) -> FieldPath:
    return at if isinstance(at, tuple) else (at,)


@dataclass(frozen=True)
class Document:
    """One parsed input file, as its error messages need it.

    ``label`` names the file, ``error`` is raised (called as ``error(label, message, line)``),
    ``locate`` returns the line of the value at a path (of its nearest existing parent when
    the path is missing), ``json`` words value kinds for JSON (``kind_of``), ``name``
    writes a path as a message names it and ``wording`` words the getters' refusals. Build
    one with ``json_document`` or ``yaml_document``.
    """

    label: str
    error: ErrorClass
    locate: Callable[[FieldPath], int | None]
    json: bool = False
    name: Callable[[FieldPath], str] = dotted_name
    wording: Wording = FIELD_WORDING

    def kind(self, value: Any) -> str:
        """Return how a message names ``value``'s kind in this document (``kind_of``)."""
        return kind_of(value, json=self.json)

    def error_at(self, path: FieldPath, message: str, *, line: int | None = None) -> InputError:
        """Return (for the caller to raise) the error ``message``, as it stands, on the line
        of ``path``, or on ``line`` when one is given."""
        return self.error(self.label, message, self.locate(path) if line is None else line)

    def fail(self, path: FieldPath, message: str, *, line: int | None = None) -> InputError:
        """Return (for the caller to raise) the error ``NAME: message`` about the value at
        ``path``, on its line (or on ``line`` when one is given)."""
        return self.error_at(path, f"{self.name(path)}: {message}", line=line)

    def missing(self, path: FieldPath, *, line: int | None = None) -> InputError:
        """Return (for the caller to raise) the error for the required value at ``path``,
        which is absent (``Wording.missing``), on its nearest parent's line or on ``line``."""
        return self.error_at(path, self.wording.missing(self, path), line=line)

    def wrong(self, path: FieldPath, expected: str, value: Any, *, got: bool = True) -> InputError:
        """Return (for the caller to raise) the error for ``value`` at ``path``, which is not
        ``expected`` (``Wording.wrong``), on its line."""
        return self.error_at(path, self.wording.wrong(self, path, expected, value, got))

    def fields(self, value: Mapping[str, Any], path: FieldPath = ()) -> Fields:
        """Return a reader of the mapping ``value``, found at ``path`` of this document."""
        return Fields(self, value, path)


def json_document(
    text: str | None,
    label: str,
    error: ErrorClass,
    *,
    name: Callable[[FieldPath], str] = dotted_name,
    wording: Wording = FIELD_WORDING,
) -> Document:
    """Return the ``Document`` of the JSON ``text`` (already parsed by the caller).

    A path's line is where its value starts (``jsonio.line_for``: one more pass over
    ``text``, paid only when an error is raised); no line is known without ``text`` (a
    value that was never text, such as a report built in memory).
    """

    def locate(path: FieldPath) -> int | None:
        return None if text is None else line_for(text, path)

    return Document(label, error, locate, json=True, name=name, wording=wording)


def yaml_document(
    root: Any, label: str, error: ErrorClass, *, name: Callable[[FieldPath], str] = dotted_name
) -> Document:
    """Return the ``Document`` whose top value is ``root`` (from ``yamlio.load_yaml``).

    A path's line is the line of its last key (``lanes:`` for ``("lanes",)``) or list item;
    the empty path's is where ``root`` starts (1 for a scalar document).
    """
    from patchlane.inputs.yamlio import line_at

    return Document(label, error, lambda path: line_at(root, path), json=False, name=name)


@dataclass(frozen=True)
class Fields(CollectionGetters):
    """Typed reading of one mapping of a ``Document``; every refusal names file, line, field.

    ``data`` is the mapping, ``path`` where it lies in the document. Keys and paths given to
    the methods (``At``: a key, an index or a tuple of them) are relative to ``path``.

    Each getter returns the value at ``key`` when it has the asked type (and passes the
    getter's checks), returns ``default`` when ``key`` is absent and a default was given,
    and otherwise raises the document's error: ``FIELD: missing`` for an absent key,
    ``FIELD: expected WHAT, got KIND`` for a value of the wrong type, ``FIELD: must be at
    least LO, got N`` for a number out of range (so worded by the default ``Wording``), or
    the getter's own message (a ``check``, a duplicate). The line is the value's, or the
    nearest parent's when the value is absent.
    """

    doc: Document
    data: Mapping[str, Any]
    path: FieldPath = ()

    # --- primitives --------------------------------------------------------------------

    def has(self, key: str) -> bool:
        """Return whether the mapping holds ``key``."""
        return key in self.data

    def get(self, key: str, default: Any = None) -> Any:
        """Return the raw value at ``key`` (unchecked), or ``default`` when it is absent."""
        return self.data.get(key, default)

    def name(self, at: At = ()) -> str:
        """Return how messages name the field at ``at`` (this mapping itself by default)."""
        return self.doc.name(self.path + _path(at))

    def line(self, at: At = ()) -> int | None:
        """Return the line of the value at ``at``, or of its nearest parent when absent."""
        return self.doc.locate(self.path + _path(at))

    def fail(self, at: At, message: str, *, line: int | None = None) -> InputError:
        """Return (for the caller to raise) ``FIELD: message`` about the field at ``at``
        (``()``: this mapping), on its line or on ``line`` when one is given."""
        return self.doc.fail(self.path + _path(at), message, line=line)

    def wrong(self, at: At, expected: str, value: Any, *, got: bool = True) -> InputError:
        """Return (for the caller to raise) ``FIELD: expected EXPECTED, got KIND`` about the
        field at ``at`` holding ``value``; without ``got``, just ``expected EXPECTED``."""
        return self.doc.wrong(self.path + _path(at), expected, value, got=got)

    def only(self, allowed: Sequence[str], *, message: str | None = None) -> Fields:
        """Refuse any key not in ``allowed``; return this reader (for chaining).

        Raises ``FIELD.KEY: message`` for the first unknown key in the mapping's order;
        ``message`` defaults to ``unknown key (expected one of: A, B)``, ``allowed`` in
        the order given.
        """
        for key in self.data:
            if key not in allowed:
                known = f"unknown key (expected one of: {', '.join(allowed)})"
                raise self.fail(key, known if message is None else message)
        return self

    def require(self, *keys: str, line: int | None = None) -> None:
        """Raise ``FIELD.KEY: missing`` for the first of ``keys`` that is absent, on the line
        of this mapping (or on ``line`` when one is given)."""
        for key in keys:
            if key not in self.data:
                raise self.doc.missing((*self.path, key), line=line)

    def _value(self, key: str, default: Any) -> Any:
        """Return the value at ``key``, ``MISSING`` for an absent key with a default."""
        if key in self.data:
            return self.data[key]
        if default is MISSING:
            raise self.doc.missing((*self.path, key))
        return MISSING

    def _within(
        self, key: str, value: float, lo: float | None, hi: float | None, expected: str
    ) -> None:
        """Raise ``Wording.out_of_range`` for ``value`` at ``key`` below ``lo`` or above ``hi``."""
        for bound, outside in (
            (f"at least {lo}", lo is not None and value < lo),
            (f"at most {hi}", hi is not None and value > hi),
        ):
            if outside:
                path = (*self.path, key)
                message = self.doc.wording.out_of_range(self.doc, path, expected, bound, value)
                raise self.doc.error_at(path, message)

    # --- scalars -------------------------------------------------------------------------

    @overload
    def text(
        self,
        key: str,
        *,
        expected: str = ...,
        accept: Callable[[str], object] | None = ...,
        check: Callable[[str], str | None] | None = ...,
    ) -> str: ...
    @overload
    def text(
        self,
        key: str,
        *,
        expected: str = ...,
        accept: Callable[[str], object] | None = ...,
        check: Callable[[str], str | None] | None = ...,
        default: D,
    ) -> str | D: ...
    def text(
        self,
        key: str,
        *,
        expected: str = "a non-empty string",
        accept: Callable[[str], object] | None = non_blank,
        check: Callable[[str], str | None] | None = None,
        default: Any = MISSING,
    ) -> Any:
        """Return the string at ``key``, as written (not stripped).

        A value that is not a string, or that ``accept`` (``non_blank`` by default; ``None``
        takes any string; a compiled pattern's ``match`` will do) refuses, raises
        ``expected EXPECTED, got KIND``; a problem ``check`` returns is raised as it says.
        """
        value = self._value(key, default)
        if value is MISSING:
            return default
        if not isinstance(value, str) or (accept is not None and not accept(value)):
            raise self.wrong(key, expected, value)
        problem = check(value) if check is not None else None
        if problem:
            raise self.fail(key, problem)
        return value

    @overload
    def string(self, key: str, *, null: Literal[False] = ...) -> str: ...
    @overload
    def string(self, key: str, *, null: Literal[False] = ..., default: D) -> str | D: ...
    @overload
    def string(self, key: str, *, null: Literal[True], default: None = ...) -> str | None: ...
    def string(self, key: str, *, null: bool = False, default: Any = MISSING) -> Any:
        """Return the string at ``key``, whatever it holds (empty or blank: ``text`` with
        ``accept=None``); with ``null``, ``null`` too, returned as ``None`` (a default is
        then ``None`` as well, if any).

        Raises ``expected a string, got KIND`` (``a string or null`` with ``null``).
        """
        value = self._value(key, default)
        if value is MISSING:
            return default
        if value is None and null:
            return None
        if not isinstance(value, str):
            raise self.wrong(key, "a string or null" if null else "a string", value)
        return value

    @overload
    def integer(
        self,
        key: str,
        *,
        lo: int | None = ...,
        hi: int | None = ...,
        expected: str = ...,
        null: Literal[False] = ...,
    ) -> int: ...
    @overload
    def integer(
        self,
        key: str,
        *,
        lo: int | None = ...,
        hi: int | None = ...,
        expected: str = ...,
        null: Literal[False] = ...,
        default: D,
    ) -> int | D: ...
    @overload
    def integer(
        self,
        key: str,
        *,
        lo: int | None = ...,
        hi: int | None = ...,
        expected: str = ...,
        null: Literal[True],
        default: None = ...,
    ) -> int | None: ...
    def integer(
        self,
        key: str,
        *,
        lo: int | None = None,
        hi: int | None = None,
        expected: str = "an integer",
        null: bool = False,
        default: Any = MISSING,
    ) -> Any:
        """Return the integer at ``key`` (never a boolean), within ``lo``..``hi`` when given;
        with ``null``, ``null`` too, returned as ``None`` (a default is then ``None`` as
        well, if any).

        Raises ``expected EXPECTED, got KIND`` (``EXPECTED or null`` with ``null``), or
        ``must be at least LO, got N`` (``at most HI``; a number of more than 20 digits is
        elided).
        """
        value = self._value(key, default)
        if value is MISSING:
            return default
        if value is None and null:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.wrong(key, f"{expected} or null" if null else expected, value)
        self._within(key, value, lo, hi, expected)
        return value

    @overload
    def number(
        self, key: str, *, lo: float | None = ..., hi: float | None = ..., expected: str = ...
    ) -> float: ...
    @overload
    def number(
        self,
        key: str,
        *,
        lo: float | None = ...,
        hi: float | None = ...,
        expected: str = ...,
        default: D,
    ) -> float | D: ...
    def number(
        self,
        key: str,
        *,
        lo: float | None = None,
        hi: float | None = None,
        expected: str = "a number",
        default: Any = MISSING,
    ) -> Any:
        """Return the number at ``key``, integer or not (never a boolean), within
        ``lo``..``hi`` when given.

        Raises ``expected EXPECTED, got KIND`` or ``must be at least LO, got N`` (``at
        most HI``).
        """
        value = self._value(key, default)
        if value is MISSING:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.wrong(key, expected, value)
        self._within(key, value, lo, hi, expected)
        return value

    @overload
    def boolean(self, key: str) -> bool: ...
    @overload
    def boolean(self, key: str, *, default: D) -> bool | D: ...
    def boolean(self, key: str, *, default: Any = MISSING) -> Any:
        """Return the boolean at ``key``. Raises ``expected true or false, got KIND``."""
        value = self._value(key, default)
        if value is MISSING:
            return default
        if not isinstance(value, bool):
            raise self.wrong(key, "true or false", value)
        return value

    @overload
    def choice(self, key: str, choices: Sequence[str], *, expected: str | None = ...) -> str: ...
    @overload
    def choice(
        self, key: str, choices: Sequence[str], *, expected: str | None = ..., default: D
    ) -> str | D: ...
    def choice(
        self,
        key: str,
        choices: Sequence[str],
        *,
        expected: str | None = None,
        default: Any = MISSING,
    ) -> Any:
        """Return the string at ``key``, one of ``choices``. Raises ``expected EXPECTED, got
        KIND``, EXPECTED defaulting to ``one of A, B`` (``choices`` in the order given)."""
        value = self._value(key, default)
        if value is MISSING:
            return default
        if not isinstance(value, str) or value not in choices:
            raise self.wrong(key, expected or "one of " + ", ".join(choices), value)
        return value

    @overload
    def date(self, key: str, *, expected: str = ...) -> date: ...
    @overload
    def date(self, key: str, *, expected: str = ..., default: D) -> date | D: ...
    def date(self, key: str, *, expected: str = "a date YYYY-MM-DD", default: Any = MISSING) -> Any:
        """Return the calendar date at ``key``: a YAML date or the text ``YYYY-MM-DD``
        (``calendar_date``). Raises ``expected EXPECTED, got KIND`` for anything else (a
        timestamp, ``2026-02-30``, ``null``: a caller for whom null means "none" checks
        ``get(key) is None`` first)."""
        value = self._value(key, default)
        if value is MISSING:
            return default
        day = calendar_date(value)
        if day is None:
            raise self.wrong(key, expected, value)
        return day

    def at(self, value: Mapping[str, Any], path: FieldPath) -> Fields:
        """Return a reader of the mapping ``value``, found at ``path`` of this document."""
        return Fields(self.doc, value, path)

    def mapping_kind(self) -> str:
        """Return what this document's messages call a mapping (``Wording.mapping``)."""
        return self.doc.wording.mapping(self.doc)
