"""The freeze registry (``tests/flaky-freeze.yml``): strict parsing into frozen dataclasses.

The seed's file loads as printed, plus the optional ``failure_log: {ref, sha256}``. Anything
else (unknown or duplicate keys, missing fields, wrong types, a date that is not a calendar
date, duplicate ids or node ids, a node id that is not a test) is a ``RegistryError`` naming
the file and line. A record's ``expires`` may be absent (audit rule 1 then fails), because
DESIGN.md §4 reports a missing expiry by rule number rather than refusing the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from patchlane.config import ReviewMap
from patchlane.errors import InputError
from patchlane.gate.classify import property_module_prefixes
from patchlane.inputs.fields import kind_of
from patchlane.inputs.paths import path_problem, under_any
from patchlane.inputs.yamlio import YamlList, YamlMap, load_yaml

_DATE_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
# Ids are printed on one terminal line and named in pytest skip reasons: keep them plain.
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_PROPERTY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_SHA256_RE = re.compile(r"^[0-9a-fA-F]{64}$")

RECORD_KEYS = (
    "id", "nodeid", "owner", "reason", "expires", "required_properties", "fixture_lock",
    "failure_log",
)  # fmt: skip
REQUIRED_KEYS = ("id", "nodeid", "owner", "reason", "required_properties")


class RegistryError(InputError):
    """The freeze registry is malformed (file, line, what is wrong)."""


@dataclass(frozen=True)
class FailureLogRef:
    """Where the failure log that justified the latest ``expires`` lives, and its hash."""

    ref: str
    sha256: str


@dataclass(frozen=True)
class FreezeRecord:
    """One freeze: a single test node id skipped until ``expires``, under conditions.

    ``expires`` is ``None`` when the record has none (rule 1 fails). ``line`` (where the
    record starts) does not take part in equality, so that moving a record is no change.
    """

    id: str
    nodeid: str
    owner: str
    reason: str
    expires: date | None
    required_properties: tuple[str, ...]
    fixture_lock: str | None
    failure_log: FailureLogRef | None
    line: int = field(default=0, compare=False)

    @property
    def test_file(self) -> str:
        """The repository path of the record's test file (the node id before ``::``)."""
        return self.nodeid.split("::", 1)[0]


def parse_date(value: Any) -> date | None:
    """Return the calendar date ``value`` names, or ``None`` when it names none.

    Accepts a YAML date (``expires: 2026-10-08``) and the exact text ``YYYY-MM-DD``
    (``"2026-10-08"``). A timestamp, ``2026-02-30``, ``20261008`` or ``next week`` is none.
    """
    if isinstance(value, datetime):  # a datetime is a date too; an expiry is a day
        return None
    if isinstance(value, date):
        return value
    if isinstance(value, str) and _DATE_RE.match(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            return None
    return None


def nodeid_problem(nodeid: str, review_map: ReviewMap) -> str | None:
    """Return why ``nodeid`` cannot be frozen under ``review_map``, or ``None``.

    A freeze names one test node id (``path.py::name...``) with the file under the map's
    ``replay.tests`` and outside every property module: never a property, a whole file or a
    directory.
    """
    if not nodeid.isprintable():
        return "contains a line break or control character"
    path, sep, rest = nodeid.partition("::")
    if not sep or not rest:
        return "not a test node id (expected 'tests/test_x.py::test_name')"
    problem = path_problem(path, directory_ok=False)
    if problem:
        return problem
    if not path.endswith(".py") or path.rsplit("/", 1)[-1] == "conftest.py":
        return f"{path!r} is not a test file (a .py file other than conftest.py)"
    tests = review_map.replay.tests
    if not under_any(path, tests):
        return f"{path!r} is not under the map's test paths ({', '.join(tests)})"
    if under_any(path, property_module_prefixes(review_map)):
        return f"{path!r} is a property module: a freeze names a test, never a property"
    for part in rest.split("::"):
        name = part.split("[", 1)[0]
        if not name:
            return "an empty name between '::'"
        if name.startswith("prop_"):
            return f"{name!r} is a property: a freeze names a test, never a property"
    return None


class _Record:
    """Typed access to one record mapping, with errors naming the file, line and key."""

    def __init__(self, label: str, m: YamlMap, where: str) -> None:
        self.label, self.m, self.where = label, m, where
        for key in m:
            if key not in RECORD_KEYS:
                known = ", ".join(RECORD_KEYS)
                raise self.fail(key, f"unknown key (expected one of: {known})")
        for key in REQUIRED_KEYS:
            if key not in m:
                raise RegistryError(label, f"{where}.{key}: missing", m.line)

    def fail(self, key: str, message: str) -> RegistryError:
        line = self.m.key_lines.get(key, self.m.line)
        return RegistryError(self.label, f"{self.where}.{key}: {message}", line)

    def text(self, key: str, *, exact: bool = False) -> str:
        """Return the one-line string at ``key``, stripped; ``exact``: refuse surrounding
        white space instead (ids and node ids are matched byte for byte)."""
        value = self.m[key]
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, f"expected a non-empty string, got {kind_of(value)}")
        if "\n" in value.strip() or "\r" in value:
            raise self.fail(key, "must be one line")
        if exact and value != value.strip():
            raise self.fail(key, f"{value!r} has leading or trailing white space")
        return value.strip()


def _record(label: str, item: Any, line: int, index: int, review_map: ReviewMap) -> FreezeRecord:
    where = f"freezes[{index}]"
    if not isinstance(item, YamlMap):
        raise RegistryError(label, f"{where}: expected a mapping, got {kind_of(item)}", line)
    r = _Record(label, item, where)
    record_id = r.text("id", exact=True)
    if not _ID_RE.match(record_id):
        raise r.fail("id", f"{record_id!r}: use letters, digits, '.', '_' and '-' (at most 100)")
    nodeid = r.text("nodeid", exact=True)
    problem = nodeid_problem(nodeid, review_map)
    if problem:
        raise r.fail("nodeid", f"{nodeid!r}: {problem}")
    expires: date | None = None
    raw = item.get("expires")
    if raw is not None:  # ``expires:`` with no value is a missing expiry (rule 1)
        expires = parse_date(raw)
        if expires is None:
            raise r.fail("expires", f"expected a date YYYY-MM-DD, got {kind_of(raw)}")
    props = item["required_properties"]
    if not isinstance(props, YamlList):
        raise r.fail("required_properties", f"expected a list of names, got {kind_of(props)}")
    names: list[str] = []
    for i, name in enumerate(props):
        at = f"{where}.required_properties[{i}]"
        if not isinstance(name, str) or not _PROPERTY_RE.match(name):
            message = f"{at}: expected a property name, got {kind_of(name)}"
            raise RegistryError(label, message, props.item_lines[i])
        if name in names:
            raise RegistryError(label, f"{at}: {name!r} is listed twice", props.item_lines[i])
        names.append(name)
    lock: str | None = None
    if "fixture_lock" in item:
        lock = r.text("fixture_lock", exact=True)
        problem = path_problem(lock, directory_ok=False)
        if problem:
            raise r.fail("fixture_lock", problem)
    return FreezeRecord(
        id=record_id,
        nodeid=nodeid,
        owner=r.text("owner"),
        reason=r.text("reason"),
        expires=expires,
        required_properties=tuple(names),
        fixture_lock=lock,
        failure_log=_failure_log(r) if "failure_log" in item else None,
        line=item.line,
    )


def _failure_log(r: _Record) -> FailureLogRef:
    value = r.m["failure_log"]
    if not isinstance(value, YamlMap):
        raise r.fail("failure_log", f"expected a mapping {{ref, sha256}}, got {kind_of(value)}")
    sub = f"{r.where}.failure_log"
    for key in value:
        if key not in ("ref", "sha256"):
            line = value.key_lines[key]
            raise RegistryError(r.label, f"{sub}.{key}: unknown key (expected ref, sha256)", line)
    for key in ("ref", "sha256"):
        if key not in value:
            raise RegistryError(r.label, f"{sub}.{key}: missing", value.line)
    ref, digest = value["ref"], value["sha256"]
    if not isinstance(ref, str) or not ref.strip() or not ref.isprintable():
        message = f"{sub}.ref: expected a one-line string, got {kind_of(ref)}"
        raise RegistryError(r.label, message, value.key_lines["ref"])
    if not isinstance(digest, str) or not _SHA256_RE.match(digest):
        message = f"{sub}.sha256: expected 64 hex digits, got {kind_of(digest)}"
        raise RegistryError(r.label, message, value.key_lines["sha256"])
    return FailureLogRef(ref=ref.strip(), sha256=digest.lower())


def parse_registry(text: str, label: str, review_map: ReviewMap) -> tuple[FreezeRecord, ...]:
    """Validate the text of a freeze registry against ``review_map`` (for the test paths
    and the property modules a node id may not name).

    Returns the records in file order. Raises ``RegistryError`` (file, line, what) for bad
    YAML, duplicate, unknown or missing keys, wrong types, a malformed date, a node id that
    is not a test, and duplicate ids or node ids (one assertion, one freeze).
    """
    doc = load_yaml(text, label, RegistryError)
    if not isinstance(doc, YamlMap):
        line = getattr(doc, "line", 1)
        raise RegistryError(label, f"expected a mapping with 'freezes', got {kind_of(doc)}", line)
    for key in doc:
        if key != "freezes":
            raise RegistryError(
                label, f"{key}: unknown key (expected: freezes)", doc.key_lines[key]
            )
    if "freezes" not in doc:
        raise RegistryError(label, "freezes: missing", doc.line)
    items = doc["freezes"]
    if not isinstance(items, YamlList):
        message = f"freezes: expected a list of records, got {kind_of(items)}"
        raise RegistryError(label, message, doc.key_lines["freezes"])
    records: list[FreezeRecord] = []
    ids: dict[str, int] = {}
    nodeids: dict[str, int] = {}
    for i, item in enumerate(items):
        record = _record(label, item, items.item_lines[i], i, review_map)
        for seen, value, what in ((ids, record.id, "id"), (nodeids, record.nodeid, "nodeid")):
            line = items[i].key_lines[what]
            if value in seen:
                message = f"freezes[{i}].{what}: {value!r} is already used on line {seen[value]}"
                raise RegistryError(label, message, line)
            seen[value] = line
        records.append(record)
    return tuple(records)
