"""The freeze registry (``tests/flaky-freeze.yml``), declared once (``inputs.model``): a list of
``freezes``, each a ``FreezeRecord``. Its schema derives from ``RegistryFile``; its strict
reader (``lanes.freeze.registry``) reads each record through ``FreezeRecord`` and then checks
what needs the review map (a node id's test paths) and the whole file (ids used twice).

A person writes the file; patchlane only reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from patchlane.formats.envelope import document_schema
from patchlane.inputs.fields import Fields, printable_non_blank
from patchlane.inputs.model import keys, required_keys, schema_parts, spec
from patchlane.inputs.paths import path_problem

# Ids are printed on one terminal line and named in pytest skip reasons: keep them plain.
ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
PROPERTY_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"
SHA256_PATTERN = "^[0-9a-fA-F]{64}$"
# A node id as far as a schema can say (``lanes.freeze.registry.nodeid_problem`` says all).
_NODEID_PATTERN = r"^[^:]+\.py::[^:].*$"
# A repository path as far as a schema can say (``inputs.paths.path_problem`` says all).
_PATH_PATTERN = r"^(?!/)(?!(.*/)?\.\.(/|$))[^\\]+$"
_TEXT_PATTERN = r"^\s*\S[\s\S]*$"


def one_line(r: Fields, key: str, *, exact: bool = False) -> str:
    """Return the one-line string at ``key``, stripped; ``exact``: refuse surrounding white
    space instead (ids and node ids are matched byte for byte). Raises ``RegistryError``."""
    value = r.text(key)
    if "\n" in value.strip() or "\r" in value:
        raise r.fail(key, "must be one line")
    if exact and value != value.strip():
        raise r.fail(key, f"{value!r} has leading or trailing white space")
    return value.strip()


def _read_id(r: Fields, key: str) -> str:
    record_id = one_line(r, key, exact=True)
    if re.fullmatch(ID_PATTERN, record_id):
        return record_id
    raise r.fail(key, f"{record_id!r}: use letters, digits, '.', '_' and '-' (at most 100)")


def _read_exact(r: Fields, key: str) -> str:
    return one_line(r, key, exact=True)


def _read_stripped(r: Fields, key: str) -> str:
    return one_line(r, key)


def _read_expires(r: Fields, key: str) -> date:
    return r.date(key)


def _read_lock(r: Fields, key: str) -> str:
    lock = one_line(r, key, exact=True)
    problem = path_problem(lock, directory_ok=False)
    if problem:
        raise r.fail(key, problem)
    return lock


@dataclass(frozen=True)
class FailureLogRef:
    """Where the failure log that justified the latest ``expires`` lives, and its hash."""

    ref: str = field(metadata=spec(pattern=_TEXT_PATTERN))
    sha256: str = field(metadata=spec(pattern=SHA256_PATTERN))


def _read_failure_log(r: Fields, key: str) -> FailureLogRef:
    log = r.mapping(key, expected="a mapping {ref, sha256}")
    log.only(keys(FailureLogRef), message="unknown key (expected ref, sha256)")
    # A missing key is reported where the mapping's own entries start.
    log.require(*keys(FailureLogRef), line=r.get(key).line)
    ref = log.text("ref", expected="a one-line string", accept=printable_non_blank)
    digest = log.text("sha256", expected="64 hex digits", accept=_sha256)
    return FailureLogRef(ref=ref.strip(), sha256=digest.lower())


def _sha256(value: str) -> bool:
    return re.fullmatch(SHA256_PATTERN, value) is not None


@dataclass(frozen=True)
class FreezeRecord:
    """One freeze: a single test node id skipped until ``expires``, under conditions.

    ``expires`` is ``None`` when the record has none (rule 1 fails). ``line`` (where the
    record starts) does not take part in equality, so that moving a record is no change.
    """

    id: str = field(metadata=spec(pattern=ID_PATTERN, read=_read_id))
    nodeid: str = field(
        metadata=spec(
            pattern=_NODEID_PATTERN,
            read=_read_exact,
            description="one test node id: path.py::name, the file under the map's "
            "replay.tests, never a property (prop_*) or a property module",
        )
    )
    owner: str = field(metadata=spec(pattern=_TEXT_PATTERN, read=_read_stripped))
    reason: str = field(metadata=spec(pattern=_TEXT_PATTERN, read=_read_stripped))
    # ``expires:`` with no value is a missing expiry (rule 1), not a malformed one.
    expires: date | None = field(
        default=None,
        metadata=spec(
            read=_read_expires,
            description="YYYY-MM-DD, quoted or not; missing (or null) fails audit rule 1",
        ),
    )
    required_properties: tuple[str, ...] = field(
        default=(),
        metadata=spec(
            required=True,
            expected="a list of names",
            item="a property name",
            pattern=PROPERTY_PATTERN,
            duplicate="{!r} is listed twice",
            description="property names (prop_x, or module.prop_x); empty fails audit rule 2",
        ),
    )
    fixture_lock: str | None = field(
        default=None, metadata=spec(pattern=_PATH_PATTERN, null=False, read=_read_lock)
    )
    failure_log: FailureLogRef | None = field(
        default=None, metadata=spec(null=False, read=_read_failure_log)
    )
    line: int = field(default=0, compare=False, metadata=spec(local=True))

    @property
    def test_file(self) -> str:
        """The repository path of the record's test file (the node id before ``::``)."""
        return self.nodeid.split("::", 1)[0]


@dataclass(frozen=True)
class RegistryFile:
    """The registry: its freezes, in file order."""

    freezes: tuple[FreezeRecord, ...]


RECORD_KEYS = keys(FreezeRecord)
REQUIRED_KEYS = required_keys(FreezeRecord)


def registry_schema() -> dict[str, object]:
    """Return the JSON Schema of the freeze registry, derived from ``RegistryFile``."""
    properties, required = schema_parts(RegistryFile)
    return document_schema(
        "flaky-freeze.yml", "patchlane freeze registry", dict(properties), required,
        name="freeze-registry",
    )  # fmt: skip
