"""The freeze registry (``tests/flaky-freeze.yml``): strict parsing into frozen dataclasses.

Records hold the keys docs/architecture.md §4 lists, ``failure_log: {ref, sha256}`` being
optional. Anything else (unknown or duplicate keys, missing fields, wrong types, a date that
is not a calendar date, duplicate ids or node ids, a node id that is not a test) is a
``RegistryError`` naming the file and line. A record's ``expires`` may be absent: the audit
reports a missing expiry by rule number (rule 1) rather than refusing the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from patchlane.errors import InputError
from patchlane.inputs.fields import (
    Fields,
    calendar_date,
    kind_of,
    printable_non_blank,
    yaml_document,
)
from patchlane.inputs.paths import path_problem, under_any
from patchlane.inputs.yamlio import YamlMap, load_yaml
from patchlane.project.classify import property_module_prefixes
from patchlane.project.config import ReviewMap

# Ids are printed on one terminal line and named in pytest skip reasons: keep them plain.
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")
_PROPERTY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_SHA256_RE = re.compile(r"^[0-9a-fA-F]{64}\Z")

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


# ``history`` reads the base's records leniently with it: the same reading of a date.
parse_date = calendar_date


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


def _text(r: Fields, key: str, *, exact: bool = False) -> str:
    """Return the one-line string at ``key``, stripped; ``exact``: refuse surrounding white
    space instead (ids and node ids are matched byte for byte)."""
    value = r.text(key)
    if "\n" in value.strip() or "\r" in value:
        raise r.fail(key, "must be one line")
    if exact and value != value.strip():
        raise r.fail(key, f"{value!r} has leading or trailing white space")
    return value.strip()


def _record(r: Fields, review_map: ReviewMap) -> FreezeRecord:
    """Validate one record (``r``: the reader of ``freezes[i]``)."""
    r.only(RECORD_KEYS)
    r.require(*REQUIRED_KEYS)
    record_id = _text(r, "id", exact=True)
    if not _ID_RE.match(record_id):
        raise r.fail("id", f"{record_id!r}: use letters, digits, '.', '_' and '-' (at most 100)")
    nodeid = _text(r, "nodeid", exact=True)
    problem = nodeid_problem(nodeid, review_map)
    if problem:
        raise r.fail("nodeid", f"{nodeid!r}: {problem}")
    # ``expires:`` with no value is a missing expiry (rule 1), not a malformed one.
    expires = r.date("expires") if r.get("expires") is not None else None
    names = r.text_list(
        "required_properties",
        expected="a list of names",
        item="a property name",
        accept=_PROPERTY_RE.match,
        duplicate="{!r} is listed twice",
    )
    lock: str | None = None
    if r.has("fixture_lock"):
        lock = _text(r, "fixture_lock", exact=True)
        problem = path_problem(lock, directory_ok=False)
        if problem:
            raise r.fail("fixture_lock", problem)
    return FreezeRecord(
        id=record_id,
        nodeid=nodeid,
        owner=_text(r, "owner"),
        reason=_text(r, "reason"),
        expires=expires,
        required_properties=names,
        fixture_lock=lock,
        failure_log=_failure_log(r) if r.has("failure_log") else None,
        line=r.line() or 0,
    )


def _failure_log(r: Fields) -> FailureLogRef:
    log = r.mapping("failure_log", expected="a mapping {ref, sha256}")
    log.only(("ref", "sha256"), message="unknown key (expected ref, sha256)")
    # A missing key is reported where the mapping's own entries start.
    log.require("ref", "sha256", line=r.get("failure_log").line)
    ref = log.text("ref", expected="a one-line string", accept=printable_non_blank)
    digest = log.text("sha256", expected="64 hex digits", accept=_SHA256_RE.match)
    return FailureLogRef(ref=ref.strip(), sha256=digest.lower())


def parse_registry(text: str, label: str, review_map: ReviewMap) -> tuple[FreezeRecord, ...]:
    """Validate the text of a freeze registry against ``review_map`` (for the test paths
    and the property modules a node id may not name).

    Returns the records in file order. Raises ``RegistryError`` (file, line, what) for bad
    YAML, duplicate, unknown or missing keys, wrong types, a malformed date, a node id that
    is not a test, and duplicate ids or node ids (one assertion, one freeze): the first
    problem ``read_registry`` finds.
    """
    records, problems = read_registry(text, label, review_map)
    if problems:
        raise problems[0]
    return records


def read_registry(
    text: str, label: str, review_map: ReviewMap
) -> tuple[tuple[FreezeRecord, ...], tuple[RegistryError, ...]]:
    """Validate a freeze registry record by record, as ``parse_registry`` does, but keep
    going past a bad record (``patchlane check`` reports every one).

    Returns ``(valid records, problems)``, both in file order: one problem per record that
    is malformed or repeats an earlier id or node id (such a record is left out). Raises
    ``RegistryError`` when the file itself is unreadable as a registry (bad YAML, no
    ``freezes`` list, a record that is not a mapping).
    """
    doc = load_yaml(text, label, RegistryError)
    if not isinstance(doc, YamlMap):
        line = getattr(doc, "line", 1)
        raise RegistryError(label, f"expected a mapping with 'freezes', got {kind_of(doc)}", line)
    top = yaml_document(doc, label, RegistryError).fields(doc)
    top.only(("freezes",), message="unknown key (expected: freezes)")
    entries = top.items("freezes", expected="a list of records", item="a mapping")
    records: list[FreezeRecord] = []
    problems: list[RegistryError] = []
    ids: dict[str, int | None] = {}
    nodeids: dict[str, int | None] = {}
    for r in entries:
        try:
            record = _record(r, review_map)
            for seen, value, what in ((ids, record.id, "id"), (nodeids, record.nodeid, "nodeid")):
                if value in seen:
                    raise r.fail(what, f"{value!r} is already used on line {seen[value]}")
            for seen, value, what in ((ids, record.id, "id"), (nodeids, record.nodeid, "nodeid")):
                seen[value] = r.line(what)
        except RegistryError as e:
            problems.append(e)
            continue
        records.append(record)
    return tuple(records), tuple(problems)
