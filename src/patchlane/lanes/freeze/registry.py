"""The freeze registry (``tests/flaky-freeze.yml``): strict parsing into frozen dataclasses.

Records hold the keys docs/architecture.md §4 lists, ``failure_log: {ref, sha256}`` being
optional; the format is declared once, as ``formats.freeze_registry.FreezeRecord``.
Anything else (unknown or duplicate keys, missing fields, wrong types, a date that is not a
calendar date, duplicate ids or node ids, a node id that is not a test) is a
``RegistryError`` naming the file and line. A record's ``expires`` may be absent: the audit
reports a missing expiry by rule number (rule 1) rather than refusing the file.
"""

from __future__ import annotations

from patchlane.errors import InputError
from patchlane.formats.freeze_registry import (
    RECORD_KEYS,
    REQUIRED_KEYS,
    RegistryFile,
)

# The lane's names for the records it reads.
from patchlane.formats.freeze_registry import FailureLogRef as FailureLogRef
from patchlane.formats.freeze_registry import FreezeRecord as FreezeRecord
from patchlane.inputs.fields import (
    Fields,
    calendar_date,
    kind_of,
    yaml_document,
)
from patchlane.inputs.model import from_fields, keys
from patchlane.inputs.paths import path_problem, under_any
from patchlane.inputs.yamlio import YamlMap, load_yaml
from patchlane.project.classify import property_module_prefixes
from patchlane.project.config import ReviewMap


class RegistryError(InputError):
    """The freeze registry is malformed (file, line, what is wrong)."""


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


def _record(r: Fields, review_map: ReviewMap) -> FreezeRecord:
    """Validate one record (``r``: the reader of ``freezes[i]``)."""
    r.only(RECORD_KEYS)
    r.require(*REQUIRED_KEYS)
    record = from_fields(FreezeRecord, r, given={"line": r.line() or 0})
    problem = nodeid_problem(record.nodeid, review_map)
    if problem:
        raise r.fail("nodeid", f"{record.nodeid!r}: {problem}")
    return record


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
    top.only(keys(RegistryFile), message="unknown key (expected: freezes)")
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
