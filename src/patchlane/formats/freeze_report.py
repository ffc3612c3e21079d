"""The freeze lane's report (``freeze-report.json``) and its one strict reader.

Every field but ``timings`` is a function of the repository, the review date, the other
lanes' reports and the failure log, so two runs give byte-identical JSON apart from that
field. ``FreezeReport`` is the format's model (``inputs.model``): its writer and its schema
(``schemas/freeze-report.schema.json``) derive from it, and the reader reads the keys that
need no cross-checking through it.

The reader (``FreezeReport.from_json``, ``FreezeReport.read``, ``parse_freeze_report``) is
the only one: the gate, ``patchlane verdict``/``review``, the receipt's verifier and the
pytest plugin all call it. What it grants decides what a host may leave unrun, so a report
that is not strictly well formed, or contradicts itself, is refused rather than believed in
part. The pytest plugin imports this module inside pytest children, before the repository's
code: it imports only the standard library and small patchlane modules (``errors``,
``formats.status``, ``inputs.fields``, ``formats.envelope``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from patchlane.formats.envelope import (
    ENVELOPE_KEYS,
    REVIEW_EVENTS_MEANING,
    parse_report_bytes,
    read_report,
    report_document,
    show,
)
from patchlane.formats.status import Status
from patchlane.inputs.fields import Document, FieldPath, Fields
from patchlane.inputs.model import Group, from_fields, spec, to_data

LANE = "freeze"
RULES = (1, 2, 3, 4, 5, 6)
IN_PLAY_RULE = 5  # "a record that fails only rule 5 is not in play" (docs/architecture.md §4)
# ``registry_source``: the base's registry decides, or none does (no lane or no registry).
BASE = "base"
NONE = "none"
_SOURCES = (BASE, NONE)
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
_REQUIRED_TOP = ("lane", "status", "reason", "records")
_REQUIRED_RECORD = ("id", "nodeid", "expires", "in_play", "ok", "failed_rules")
# The keys ``to_json`` can write, at each level; the reader refuses any other.
_TOP_KEYS = (
    *ENVELOPE_KEYS,
    "records",
    "today",
    "registry",
    "registry_source",
    "max_age_days",
    "max_extensions",
    "base",
    "head",
    "merge_base",
    "added_by_patch",
    "changed_by_patch",
    "removed_by_patch",
    "head_registry_problem",
    "skippable",
    "history_versions",
    "notes",
    "timings",
    "review_events",
)
_RECORD_KEYS = (*_REQUIRED_RECORD, "owner", "details")


def _details_data(details: tuple[str, ...]) -> dict[str, str]:
    return {str(rule): text for rule, text in zip(RULES, details, strict=True)}


_DETAILS_SCHEMA = {
    "type": "object",
    "properties": {str(rule): {"type": "string"} for rule in RULES},
    "additionalProperties": False,
    "description": "one line per rule, keyed by its number: why it holds or fails",
}


@dataclass(frozen=True)
class RecordResult:
    """One audited record: whether it is in play (rule 5 holds), which rules failed, and
    one line per rule (1 to 6, pass or fail) saying why. ``in_play`` and ``ok`` are
    computed from ``failed_rules``."""

    id: str
    nodeid: str
    owner: str = field(metadata=spec(absent=""))
    expires: date | None = field(metadata=spec(required=True))
    # Whether the record concerns this patch (rule 5 holds).
    in_play: bool = field(init=False)
    # Whether every rule holds: only then may the record's node id be skipped.
    ok: bool = field(init=False)
    failed_rules: tuple[int, ...] = field(
        metadata=spec(lo=RULES[0], hi=RULES[-1], duplicate="{!r} is listed twice")
    )
    # details[i] explains rule i + 1 ("" when a report read back has none).
    details: tuple[str, ...] = field(
        metadata=spec(dump=_details_data, schema=_DETAILS_SCHEMA, absent=("",) * len(RULES))
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "in_play", IN_PLAY_RULE not in self.failed_rules)
        object.__setattr__(self, "ok", not self.failed_rules)

    @property
    def red(self) -> bool:
        """Whether the record turns the lane red: in play, and another rule fails."""
        return self.in_play and not self.ok

    def to_json(self) -> dict[str, object]:
        """Return the record as JSON-ready data, keys in a fixed order."""
        return to_data(self)


# A key only a lane that audited something writes (``today`` is not none).
_AUDITED = spec(when="today")
_NAMES = spec(when="today", item=None)
_TIMINGS = Group("timings", "how long the audit took: the one field that differs between runs")


def _rounded(seconds: float) -> float:
    return round(seconds, 6)


def _read_skippable(top: Fields, key: str) -> tuple[str, ...]:
    value = top.get(key)
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise top.doc.error_at((key,), f"'skippable' must be a list of node ids, not {show(value)}")
    return tuple(value)


@dataclass(frozen=True)
class FreezeReport:
    """The freeze lane's report.

    ``status`` is ``pass`` (no in-play record fails), ``fail`` (one does, or the patch's
    registry cannot be read) or ``not_applicable`` (no freeze lane, or no registry at base
    or head). ``today`` is ``None`` only for a lane that audited nothing (the map has no
    freeze lane): its file holds ``records`` and nothing of the audit. ``registry_source``
    is ``base`` or ``none``. ``skippable`` holds the node ids of the records in play that
    pass every rule: the only node ids anything may skip. ``review_events`` are read from a
    file that has them (the audit raises none): the verdict honours them in every report.
    """

    status: Status
    reason: str
    today: date | None = field(default=None, metadata=spec(write="notnone", null=False))
    registry: str | None = field(default=None, metadata=_AUDITED)
    registry_source: str = field(default=NONE, metadata=spec(when="today", choices=_SOURCES))
    max_age_days: int | None = field(default=None, metadata=spec(when="today", lo=0))
    max_extensions: int | None = field(default=None, metadata=spec(when="today", lo=0))
    base: str | None = field(default=None, metadata=_AUDITED)
    head: str | None = field(default=None, metadata=_AUDITED)
    merge_base: str | None = field(default=None, metadata=_AUDITED)
    records: tuple[RecordResult, ...] = field(default=(), metadata=spec(required=True))
    added_by_patch: tuple[str, ...] = field(default=(), metadata=_NAMES)
    changed_by_patch: tuple[str, ...] = field(default=(), metadata=_NAMES)
    removed_by_patch: tuple[str, ...] = field(default=(), metadata=_NAMES)
    head_registry_problem: str | None = field(default=None, metadata=_AUDITED)
    # The node ids of the records in play that pass every rule, in registry order.
    skippable: tuple[str, ...] = field(
        default=(), init=False, metadata=spec(when="today", read=_read_skippable)
    )
    history_versions: int = field(default=0, metadata=spec(when="today", lo=0))
    notes: tuple[str, ...] = field(default=(), metadata=_NAMES)
    seconds: float = field(
        default=0.0, metadata=spec(when="today", group=_TIMINGS, lo=0, dump=_rounded)
    )
    review_events: tuple[str, ...] = field(
        default=(), metadata=spec(write="nonempty", item=None, description=REVIEW_EVENTS_MEANING)
    )

    def __post_init__(self) -> None:
        skippable = tuple(r.nodeid for r in self.records if r.in_play and r.ok)
        object.__setattr__(self, "skippable", skippable)

    @classmethod
    def not_applicable(cls, reason: str) -> FreezeReport:
        """Return the report of a lane that audited nothing (the map has no freeze lane),
        saying ``reason``."""
        return cls(Status.NOT_APPLICABLE, reason)

    @property
    def lane(self) -> str:
        """The lane's name, ``freeze``."""
        return LANE

    @property
    def ok(self) -> bool:
        """Whether the lane is green (not ``fail``)."""
        return self.status != Status.FAIL

    def granted(self) -> dict[str, tuple[str, str]]:
        """Return what the report lets a host skip: ``{nodeid: (freeze id, expires)}`` for
        each record in play that passes every rule, and nothing unless ``status`` is
        ``pass`` (a red audit grants nothing)."""
        if self.status != Status.PASS:
            return {}
        return {
            r.nodeid: (r.id, r.expires.isoformat())
            for r in self.records
            if r.in_play and r.ok and r.expires is not None
        }

    def to_json(self) -> dict[str, object]:
        """Return the report as JSON-ready data, keys in a fixed order: a lane that audited
        nothing (no ``today``) writes only ``lane``, ``status``, ``reason``, ``records`` and
        any review events."""
        return to_data(self, {"lane": LANE})

    @classmethod
    def from_json(cls, data: object, label: str) -> FreezeReport:
        """Return the report that the JSON value ``data`` holds.

        Raises ``ReportError`` naming ``label`` at the first value that is not well formed
        or that contradicts another (see ``_parse``).
        """
        return _parse(report_document(label), data)

    @classmethod
    def read(cls, path: Path, label: str | None = None) -> FreezeReport:
        """Read and strictly check the report file ``path`` (``label`` names it in
        messages). Raises ``ReportError``, ``FILE[:LINE]: what is wrong``, when it cannot be
        read, is not strict JSON (duplicate keys included) or is not a well-formed report."""
        return read_report(path, label, _parse)


def parse_freeze_report(data: bytes, label: str) -> FreezeReport:
    """Return the report held by the bytes ``data`` of a file called ``label`` (for a caller
    that also needs the bytes, as the pytest plugin does to hash them). Raises
    ``ReportError`` as ``FreezeReport.read`` does."""
    return parse_report_bytes(data, label, _parse)


# --- strict checking ---------------------------------------------------------------------------


def _text(doc: Document, value: object, where: FieldPath, what: str) -> str:
    """A non-empty string of printable characters (it ends up on one terminal line)."""
    if not isinstance(value, str) or not value or not value.isprintable():
        message = f"{what} must be a non-empty one-line string, not {show(value)}"
        raise doc.error_at(where, message)
    return value


def _date(doc: Document, value: object, where: FieldPath, what: str) -> date:
    """A real calendar date written YYYY-MM-DD."""
    if isinstance(value, str) and _DATE.match(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise doc.error_at(where, f"{what} must be a date YYYY-MM-DD, not {show(value)}")


def _parse(doc: Document, value: object) -> FreezeReport:
    """Check the report's shape and inner consistency; return it.

    Raises ``ReportError`` at the first problem: a missing, unknown or mistyped key, a
    record whose ``in_play``/``ok`` contradict its ``failed_rules``, an in-play failing
    record under ``status: pass``, two records with one id or granting one node id, or a
    ``skippable`` that is not exactly the granted node ids.
    """
    if not isinstance(value, dict):
        raise doc.error_at((), f"a freeze report must be a JSON object, not {show(value)}")
    doc.fields(value).only(_TOP_KEYS)
    for key in _REQUIRED_TOP:
        if key not in value:
            raise doc.error_at((), f"missing key {key!r}")
    if value["lane"] != LANE:
        message = f"'lane' must be \"freeze\", not {show(value['lane'])}"
        raise doc.error_at(("lane",), message)
    if value["status"] not in tuple(Status):
        names = ", ".join(Status)
        message = f"'status' must be one of {names}, not {show(value['status'])}"
        raise doc.error_at(("status",), message)
    status = Status(value["status"])
    if not isinstance(value["reason"], str):
        message = f"'reason' must be a string, not {show(value['reason'])}"
        raise doc.error_at(("reason",), message)
    today = _date(doc, value["today"], ("today",), "'today'") if "today" in value else None
    if not isinstance(value["records"], list):
        message = f"'records' must be a list, not {show(value['records'])}"
        raise doc.error_at(("records",), message)
    records = _records(doc, value["records"], status)
    top = doc.fields(value)
    top.boolean("not_built", default=False)  # written by early versions; means nothing
    given = {"status": status, "reason": value["reason"], "records": records, "today": today}
    report = from_fields(FreezeReport, top, given=given, extra=ENVELOPE_KEYS)
    if "skippable" in value:
        _check_skippable(doc, value["skippable"], _grants(records))
    return report


def _records(doc: Document, records: list[Any], status: Status) -> tuple[RecordResult, ...]:
    """Check every record, each id once and each granted node id once; return them."""
    out: list[RecordResult] = []
    seen_ids: set[str] = set()
    granted: dict[str, str] = {}  # node id -> the id of the record that grants it
    for index, raw in enumerate(records):
        record = _record(doc, raw, ("records", index), status)
        if record.id in seen_ids:
            message = f"freeze id {record.id!r} appears twice"
            raise doc.error_at(("records", index, "id"), message)
        seen_ids.add(record.id)
        out.append(record)
        if not (record.in_play and record.ok):
            continue  # grants nothing
        if record.nodeid in granted:
            # Two passing freezes of one test: the skip could name either, so neither is trusted.
            raise doc.error_at(
                ("records", index, "nodeid"),
                f"node id {record.nodeid!r} is granted by two records "
                f"({granted[record.nodeid]!r}, {record.id!r})",
            )
        granted[record.nodeid] = record.id
    return tuple(out)


def _record(doc: Document, record: object, where: FieldPath, status: Status) -> RecordResult:
    """Check one record and return it.

    A record grants a skip when it is in play and ok; such a record must carry an expiry.
    """
    if not isinstance(record, dict):
        raise doc.error_at(where, f"a record must be a JSON object, not {show(record)}")
    doc.fields(record, where).only(_RECORD_KEYS)
    for key in _REQUIRED_RECORD:
        if key not in record:
            raise doc.error_at(where, f"record is missing key {key!r}")
    freeze_id = _text(doc, record["id"], (*where, "id"), "'id'")
    nodeid = _text(doc, record["nodeid"], (*where, "nodeid"), f"record {freeze_id!r}: 'nodeid'")
    label = f"record {freeze_id!r}"
    owner = record.get("owner", "")
    if not isinstance(owner, str):
        raise doc.error_at((*where, "owner"), f"{label}: 'owner' must be a string")
    details = _details(doc, record.get("details", {}), (*where, "details"), label)
    expires = record["expires"]
    if expires is not None:
        expires = _date(doc, expires, (*where, "expires"), f"{label}: 'expires' (or null)")
    in_play, ok = record["in_play"], record["ok"]
    for key, flag in (("in_play", in_play), ("ok", ok)):
        if not isinstance(flag, bool):
            raise doc.error_at((*where, key), f"{label}: {key!r} must be true or false")
    rules = record["failed_rules"]
    if (
        not isinstance(rules, list)
        # bool is an int in Python, but true is not a rule number.
        or not all(isinstance(r, int) and not isinstance(r, bool) and r in RULES for r in rules)
        or len(set(rules)) != len(rules)
    ):
        raise doc.error_at(
            (*where, "failed_rules"),
            f"{label}: 'failed_rules' must be a list of distinct rule numbers 1-6, not {show(rules)}",
        )
    # "In play" means rule 5 holds, and an in-play record passes when no rule fails
    # (docs/architecture.md §4). A report that contradicts itself is not believed either way.
    if in_play == (IN_PLAY_RULE in rules):
        raise doc.error_at(
            (*where, "in_play"),
            f"{label}: 'in_play' is {show(in_play)} but 'failed_rules' is {show(rules)} (in play means rule 5 holds)",
        )
    if in_play and ok == bool(rules):
        raise doc.error_at(
            (*where, "ok"),
            f"{label}: 'ok' is {show(ok)} but 'failed_rules' is {show(rules)}",
        )
    if status == Status.PASS and in_play and not ok:
        raise doc.error_at(
            (*where, "ok"),
            f"{label} is in play and fails rules {show(rules)}, yet 'status' is \"pass\"",
        )
    if in_play and ok and expires is None:
        raise doc.error_at((*where, "expires"), f"{label} is in play and ok but has no 'expires'")
    return RecordResult(freeze_id, nodeid, owner, expires, tuple(rules), details)


def _details(doc: Document, value: object, where: FieldPath, label: str) -> tuple[str, ...]:
    """``details``: an object of one line per rule, keyed ``"1"``..``"6"`` (a rule without
    a line reads as empty)."""
    if not isinstance(value, dict):
        raise doc.error_at(where, f"{label}: 'details' must be an object")
    for key, text in value.items():
        if key not in {str(rule) for rule in RULES} or not isinstance(text, str):
            raise doc.error_at(
                (*where, key), f"{label}: 'details' must map rule numbers 1-6 to one line each"
            )
    return tuple(value.get(str(rule), "") for rule in RULES)


def _grants(records: tuple[RecordResult, ...]) -> frozenset[str]:
    return frozenset(r.nodeid for r in records if r.in_play and r.ok)


def _check_skippable(doc: Document, skippable: object, granted: frozenset[str]) -> None:
    """``skippable`` must name exactly the in-play, ok records' node ids, each once."""
    if not isinstance(skippable, list) or not all(isinstance(n, str) for n in skippable):
        raise doc.error_at(
            ("skippable",), f"'skippable' must be a list of node ids, not {show(skippable)}"
        )
    if len(set(skippable)) != len(skippable):
        raise doc.error_at(("skippable",), "'skippable' lists a node id twice")
    for index, nodeid in enumerate(skippable):
        if nodeid not in granted:
            raise doc.error_at(
                ("skippable", index),
                f"'skippable' lists {nodeid!r}, which no in-play, ok record names",
            )
    missing = sorted(granted - set(skippable))
    if missing:
        raise doc.error_at(
            ("skippable",), f"'skippable' omits {missing[0]!r}, which an in-play, ok record names"
        )
