"""The fixture lock (``LOCK.json``), declared once (``inputs.model``): ``{"reason", "updated",
"files": [{"path", "sha256"}]}``. Its writer and its schema derive from ``LockFile``; its
strict reader (``lanes.fixture.lockfile.parse_lock``) reads the top keys through it and the
entries, which it checks against the map's roots, by ``LockEntry``'s keys.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from patchlane.formats.envelope import document_schema
from patchlane.inputs.fields import printable_non_blank
from patchlane.inputs.model import keys, schema_parts, spec, to_data

# Everything str.splitlines() splits on: a reason with any of these would print as two lines.
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
SHA256_PATTERN = "^[0-9a-fA-F]{64}$"
# A repository path, as far as a schema can say (``inputs.paths.path_problem`` says all):
# relative, no ``..`` component, no backslash.
_PATH_PATTERN = r"^(?!/)(?!(.*/)?\.\.(/|$))[^\\]+$"
# One line of printable text with something besides white space in it.
_ONE_LINE_PATTERN = r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]*\S[^\x00-\x1f\x7f-\x9f\u2028\u2029]*$"


def reason_problem(reason: str) -> str | None:
    """Return why ``reason`` is not an acceptable one-line lock reason, or ``None``.

    The reason is shown in the review note, so it must be one line of printable text: a
    newline or control character could forge a line of the note.
    """
    if not reason.strip():
        return "must not be empty"
    if any(c in _LINE_BREAKS for c in reason):
        return "must be one line"
    if not reason.isprintable():
        return "must be printable text (no control characters)"
    return None


@dataclass(frozen=True)
class LockEntry:
    """One locked file: its repository path and the SHA-256 of its bytes."""

    path: str = field(metadata=spec(pattern=_PATH_PATTERN))
    sha256: str = field(metadata=spec(pattern=SHA256_PATTERN))


@dataclass(frozen=True)
class LockFile:
    """A lock as its file holds it: why it was last updated, when, and the locked files
    (sorted by path when written)."""

    reason: str | None = field(
        default=None,
        metadata=spec(
            expected="a one-line string", check=reason_problem, pattern=_ONE_LINE_PATTERN,
            write="notnone", null=False,
        ),
    )  # fmt: skip
    updated: str | None = field(
        default=None,
        metadata=spec(
            expected="a one-line timestamp string", accept=printable_non_blank,
            write="notnone", null=False,
        ),
    )  # fmt: skip
    files: tuple[LockEntry, ...] = field(default=(), metadata=spec(required=True))

    def render(self) -> str:
        """Return the lock's text: two-space indent and a trailing newline, so that a lock
        update is a small, readable diff; non-ASCII paths kept as written."""
        return json.dumps(to_data(self), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


# The keys of a lock and of an entry, as its refusals list them.
TOP_KEYS = tuple(sorted(keys(LockFile)))
ENTRY_KEYS = keys(LockEntry)


def lock_schema() -> dict[str, object]:
    """Return the JSON Schema of a fixture lock, derived from ``LockFile``."""
    properties, required = schema_parts(LockFile)
    return document_schema(
        "LOCK.json", "patchlane fixture lock", dict(properties), required, name="lock"
    )
