"""Reading a report back strictly, and what every lane report has (its envelope).

A report read back (by ``patchlane verdict`` and ``review``, the freeze audit's command, the
pytest plugin, the receipt's verifier) may have been written or edited by anyone, so every
value is checked before it is believed. A report's parser reads it with ``inputs.fields``,
like every other input, from a ``report_document``: its error class is ``ReportError`` and
its messages keep the reports' wording, ``FILE:LINE: 'FIELD' must be WHAT, not VALUE``
(``ReportWording``). ``read_report`` and ``parse_report_bytes`` read a file or its bytes and
hand the parser its document; ``envelope`` and ``review_events`` read what every lane report
has.

Besides the standard library it imports only ``patchlane.errors``, ``formats.status``,
``inputs.jsonio``, ``inputs.fields`` and ``inputs.model``: the pytest plugin reads freeze reports with it
inside pytest children, before the repository's code, and must stay cheap to load.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from patchlane.errors import ReportError
from patchlane.formats.status import Status
from patchlane.inputs.fields import Document, FieldPath, Fields, Wording, json_document
from patchlane.inputs.jsonio import dotted, parse_json_bytes, read_file_bytes
from patchlane.inputs.model import schema_parts, spec
from patchlane.inputs.wording import Named

T = TypeVar("T")

# The keys every lane report may have (``not_built``: see ``envelope``); each report's reader
# refuses any key its format does not name (docs/architecture.md §4).
ENVELOPE_KEYS = ("lane", "status", "reason", "not_built")

# A report's parser: the report held by a JSON value of the document; raises ``ReportError``.
Parser = Callable[[Document, object], T]


def show(value: object) -> str:
    """Return a JSON value rendered for a one-line message: JSON text, ASCII, cut short."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError):  # not JSON data at all (a caller's bug, or a NaN)
        text = ascii(value)
    return text if len(text) <= 40 else text[:37] + "..."


class ReportWording(Wording):
    """The reports' wording of a refusal: ``'FIELD' must be WHAT, not VALUE`` (``show``),
    ``'FIELD' must be present (it is missing)``, ``'FIELD' must be an integer of at least
    0, not -1``, a mapping being ``a JSON object``."""

    def missing(self, doc: Named, path: FieldPath) -> str:
        """Return ``'FIELD' must be present (it is missing)``."""
        return f"{doc.name(path)} must be present (it is missing)"

    def wrong(self, doc: Named, path: FieldPath, expected: str, value: Any, got: bool) -> str:
        """Return ``'FIELD' must be EXPECTED, not VALUE`` (without ``got``, no VALUE)."""
        shown = f", not {show(value)}" if got else ""
        return f"{doc.name(path)} must be {expected}{shown}"

    def out_of_range(
        self, doc: Named, path: FieldPath, expected: str, bound: str, value: float
    ) -> str:
        """Return ``'FIELD' must be EXPECTED of BOUND, not VALUE``."""
        return f"{doc.name(path)} must be {expected} of {bound}, not {show(value)}"

    def mapping(self, doc: Named) -> str:
        """Return ``a JSON object``."""
        return "a JSON object"


REPORT_WORDING = ReportWording()


def field_name(path: FieldPath) -> str:
    """Return how a report's messages name a field: ``'roots[0].ok'``, quoted (``the
    report`` for the document itself)."""
    return f"'{dotted(path)}'" if path else "the report"


def report_document(label: str, text: str | None = None) -> Document:
    """Return the ``Document`` of a report called ``label``: errors are ``ReportError``,
    worded as ``ReportWording`` says, on the line of ``text`` the value was parsed from
    (no line without it)."""
    return json_document(text, label, ReportError, name=field_name, wording=REPORT_WORDING)


def parse_report_bytes(data: bytes, label: str, parser: Parser[T]) -> T:
    """Decode ``data`` (UTF-8), parse it as strict JSON and return what ``parser`` reads
    from it.

    Raises ``ReportError`` naming ``label`` and, where there is one, the line: for bytes
    that are not UTF-8, text that is not strict JSON (duplicate keys included), or a value
    the parser refuses.
    """
    value, text = parse_json_bytes(data, label, ReportError)
    return parser(report_document(label, text), value)


def read_report(path: Path, label: str | None, parser: Parser[T]) -> T:
    """Read the report file ``path`` and return what ``parser`` reads from its JSON value.

    ``label`` names the file in messages (default: ``path`` as given). Raises
    ``ReportError`` when it cannot be read, and as ``parse_report_bytes`` does.
    """
    name = os.fspath(path) if label is None else label
    return parse_report_bytes(read_file_bytes(path, name, ReportError), name, parser)


def envelope(doc: Document, value: object, lane: str) -> tuple[Fields, Status, str]:
    """Check what every lane report has: a JSON object of ``lane`` with a ``status`` and a
    ``reason`` (and, when present, ``not_built`` a boolean: written by early versions for a
    lane not yet built, and ignored since every lane exists).

    Returns a reader of the object, its status and its reason. Raises ``ReportError``
    otherwise.
    """
    if not isinstance(value, dict):
        raise doc.error_at((), "expected a JSON object")
    if value.get("lane") != lane:
        raise doc.error_at(("lane",), f"'lane' is {value.get('lane')!r}, expected {lane!r}")
    status = value.get("status")
    if status not in tuple(Status) or not isinstance(status, str):
        names = sorted(s.value for s in Status)
        raise doc.error_at(("status",), f"'status' is {status!r}, expected one of {names}")
    reason = value.get("reason")
    if not isinstance(reason, str):
        raise doc.error_at(("reason",), "'reason' must be a string")
    if not isinstance(value.get("not_built", False), bool):
        raise doc.error_at(("not_built",), "'not_built' must be true or false")
    return doc.fields(value), Status(status), reason


def document_schema(
    file_name: str,
    title: str,
    properties: dict[str, object],
    required: list[str],
    *,
    name: str | None = None,
) -> dict[str, object]:
    """Return the JSON Schema (draft 2020-12) of the file ``file_name`` (e.g.
    ``verdict.json``), called ``title``: an object of ``properties``, the ``required`` ones
    listed, any other key refused. Its ``$id`` names the schema ``name`` (default: the file
    name without ``.json``)."""
    stem = file_name.removesuffix(".json") if name is None else name
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://patchlane.invalid/schemas/{stem}.schema.json",
        "title": f"{title} ({file_name})",
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def report_schema(lane: str, model: type, file_name: str, title: str) -> dict[str, object]:
    """Return the JSON Schema of the lane report ``model`` (``file_name``, e.g.
    ``fixture-report.json``): the envelope's keys, then the model's. The committed schemas
    are this function's output (``formats.schemas``)."""
    properties, required = schema_parts(model)
    envelope_keys: dict[str, object] = {
        "lane": {"const": lane},
        "status": properties.pop("status"),
        "reason": properties.pop("reason"),
        "not_built": {
            "type": "boolean",
            "description": "written by early versions for a lane not built yet; still "
            "accepted, and ignored: the report's status decides",
        },
    }
    return document_schema(file_name, title, {**envelope_keys, **properties}, ["lane", *required])


def review_events(top: Fields) -> tuple[str, ...]:
    """Return a report's ``review_events`` (none when absent): each keeps the verdict at
    ``undecided``, whichever lane's report carries it. Raises ``ReportError``."""
    events = top.get("review_events", [])
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        raise top.doc.error_at(
            (*top.path, "review_events"), "'review_events' must be a list of strings"
        )
    return tuple(events)


def read_review_events(top: Fields, key: str) -> tuple[str, ...]:
    """Return the ``review_events`` of a report read as a model (``key``, always that):
    ``review_events``, for a ``Spec.read``. Raises ``ReportError``."""
    del key
    return review_events(top)


# What a report's ``review_events`` are, as its schema says.
REVIEW_EVENTS_MEANING = "what a person must look at: each keeps the verdict at undecided"
# The ``review_events`` key every lane report may carry: written only when there is one, and
# read with the reports' own message.
REVIEW_EVENTS = spec(write="nonempty", read=read_review_events, description=REVIEW_EVENTS_MEANING)
