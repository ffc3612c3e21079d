"""The fixture lock (``LOCK.json``): strict parsing, and rendering for ``fixture lock``.

The format is the seed's ``{"files": [{"path", "sha256"}]}`` plus an optional top-level
``reason`` (one line) and ``updated`` (a string). Every deviation is a ``LockError`` naming
the file, the line and the JSON field: a lock decides whether fixture bytes may change, so
nothing in it is guessed, defaulted or ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from patchlane.config import FixtureRoot
from patchlane.errors import LockError
from patchlane.inputs import kind_of
from patchlane.jsonio import JsonPath, line_for, parse_json_text
from patchlane.paths import path_problem, under_any
from patchlane.untrusted import DEPTH_FAILURES

if TYPE_CHECKING:
    from datetime import datetime

TOP_KEYS = ("files", "reason", "updated")
ENTRY_KEYS = ("path", "sha256")

_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
# Everything str.splitlines() splits on: a reason with any of these would print as two lines.
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


@dataclass(frozen=True)
class LockEntry:
    """One pinned file: repository path and lower-case hex SHA-256."""

    path: str
    sha256: str


@dataclass(frozen=True)
class Lock:
    """A validated lock: ``expected`` maps each path to its hash, in the file's order."""

    label: str
    expected: dict[str, str]
    reason: str | None
    updated: str | None

    @property
    def files(self) -> tuple[LockEntry, ...]:
        """Return the entries in the file's order."""
        return tuple(LockEntry(path, digest) for path, digest in self.expected.items())


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


def _json_kind(value: Any) -> str:
    return kind_of(value, json=True)


class _Checker:
    """Raises ``LockError`` naming the JSON field and the line it starts on."""

    def __init__(self, text: str, label: str) -> None:
        self.text = text
        self.label = label

    def fail(self, where: JsonPath, message: str) -> LockError:
        """Return (for the caller to raise) the error for the field at ``where``."""
        return LockError(self.label, f"{_field(where)}: {message}", line_for(self.text, where))


def _field(where: JsonPath) -> str:
    out = ""
    for part in where:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "(top level)"


def parse_lock_bytes(
    data: bytes, label: str, root: FixtureRoot | None = None, *, locks: Collection[str] = ()
) -> Lock:
    """Decode ``data`` as UTF-8 and parse it with ``parse_lock``.

    Returns a ``Lock``. Raises ``LockError`` when the bytes are not UTF-8 or the lock is
    malformed.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LockError(label, f"not UTF-8 (byte {e.start})") from e
    return parse_lock(text, label, root, locks=locks)


def parse_lock(
    text: str, label: str, root: FixtureRoot | None = None, *, locks: Collection[str] = ()
) -> Lock:
    """Strictly parse the text of a lock.

    ``root`` (when given) is the map's root for this lock: every entry must lie under its
    paths. ``locks`` are the lane's lock files, which are never hashed and so may not be
    listed. Returns a ``Lock`` with hashes normalised to lower case. Raises ``LockError``
    (file, line, field) for invalid JSON, duplicate keys, NaN, unknown or missing keys,
    wrong types, a hash that is not 64 hex characters (the seed's placeholder included), an
    unsafe path, a path outside the root, a lock file, a path listed twice, and a reason
    that is empty or not one line.
    """
    doc = parse_json_text(text, label, LockError)
    check = _Checker(text, label)
    if not isinstance(doc, dict):
        raise check.fail((), f"expected an object with 'files', got {_json_kind(doc)}")
    for key in doc:
        if key not in TOP_KEYS:
            raise check.fail((key,), f"unknown key (expected one of: {', '.join(TOP_KEYS)})")
    if "files" not in doc:
        raise LockError(label, "files: missing (expected a list of {path, sha256})", 1)
    raw_files = doc["files"]
    if not isinstance(raw_files, list):
        raise check.fail(
            ("files",), f"expected a list of {{path, sha256}}, got {_json_kind(raw_files)}"
        )

    reason: str | None = None
    if "reason" in doc:
        value = doc["reason"]
        if not isinstance(value, str):
            raise check.fail(("reason",), f"expected a one-line string, got {_json_kind(value)}")
        problem = reason_problem(value)
        if problem:
            raise check.fail(("reason",), problem)
        reason = value
    updated: str | None = None
    if "updated" in doc:
        value = doc["updated"]
        if not isinstance(value, str) or not value.strip() or not value.isprintable():
            raise check.fail(
                ("updated",), f"expected a one-line timestamp string, got {_json_kind(value)}"
            )
        updated = value

    lock_set = frozenset(locks)
    covers = _covers(root)
    expected: dict[str, str] = {}
    index: dict[str, int] = {}
    for i, item in enumerate(raw_files):
        # Fast path for the well-formed entry (large locks have thousands): only C-level
        # string and dict operations. Anything it does not vouch for takes the precise path
        # below, which either accepts the entry or raises with the field and line.
        if (
            type(item) is dict
            and len(item) == 2
            and type(path := item.get("path")) is str
            and type(digest := item.get("sha256")) is str
            and _plainly_safe(path)
            and covers(path)
            and path not in lock_set
            and path not in expected
            and _SHA256.fullmatch(digest)
        ):
            expected[path] = digest.lower()
            index[path] = i
            continue
        path, digest = _checked_entry(check, item, i, root, lock_set, index)
        expected[path] = digest
        index[path] = i
    return Lock(label=label, expected=expected, reason=reason, updated=updated)


def _covers(root: FixtureRoot | None) -> Callable[[str], bool]:
    if root is None:
        return lambda path: True
    return covers(root.paths)


def covers(prefixes: Sequence[str]) -> Callable[[str], bool]:
    """Return a predicate equal to ``lambda p: paths.under_any(p, prefixes)``, made of one
    ``str.startswith`` with a tuple: fast enough to run on every file of a large tree."""
    dirs = tuple(p if p.endswith("/") else p + "/" for p in prefixes)
    exact = frozenset(p for p in prefixes if not p.endswith("/"))
    return lambda path: path.startswith(dirs) or path in exact


def _plainly_safe(path: str) -> bool:
    """Return True only for paths ``path_problem`` certainly accepts as file paths.

    No component is empty, ``.`` or ``..`` when the path neither starts nor ends with
    ``/``, has no ``//`` and no component starts with a dot. False means "look closer".
    """
    return (
        bool(path)
        and path[0] not in "/."
        and path[-1] != "/"
        and "//" not in path
        and "/." not in path
        and "\\" not in path
        and "\x00" not in path
    )


def _checked_entry(
    check: _Checker,
    item: Any,
    i: int,
    root: FixtureRoot | None,
    lock_set: frozenset[str],
    index: dict[str, int],
) -> tuple[str, str]:
    """Validate one lock entry field by field; return ``(path, lower-case sha256)``.

    Raises ``LockError`` naming the field and its line.
    """
    at: JsonPath = ("files", i)
    if not isinstance(item, dict):
        raise check.fail(at, f"expected an object {{path, sha256}}, got {_json_kind(item)}")
    for key in item:
        if key not in ENTRY_KEYS:
            raise check.fail((*at, key), "unknown key (expected path, sha256)")
    for key in ENTRY_KEYS:
        if key not in item:
            # The field has no line of its own; name the line where its entry starts.
            raise LockError(check.label, f"{_field((*at, key))}: missing", line_for(check.text, at))
    path, digest = item["path"], item["sha256"]
    if not isinstance(path, str):
        raise check.fail((*at, "path"), f"expected a repository path, got {_json_kind(path)}")
    problem = path_problem(path, directory_ok=False)
    if problem:
        raise check.fail((*at, "path"), problem)
    if root is not None and not under_any(path, root.paths):
        roots = ", ".join(root.paths)
        raise check.fail((*at, "path"), f"{path!r} is outside this lock's root ({roots})")
    if path in lock_set:
        raise check.fail((*at, "path"), f"{path!r} is a lock file; lock files are never hashed")
    if path in index:
        raise check.fail((*at, "path"), f"{path!r} is listed twice (first at files[{index[path]}])")
    if not isinstance(digest, str):
        raise check.fail((*at, "sha256"), f"expected 64 hex characters, got {_json_kind(digest)}")
    if not _SHA256.fullmatch(digest):
        raise check.fail((*at, "sha256"), f"{digest!r} is not a SHA-256 (64 hex characters)")
    return path, digest.lower()


def lenient_reason(data: bytes) -> str | None:
    """Return the top-level ``reason`` string of a lock's bytes, or ``None``.

    Used only for the base side of the lock-update rule: the base lock's reason is compared
    with the head's, and a base lock that does not parse simply has no reason to repeat.
    Never raises, however the bytes are made (not UTF-8, not JSON, nested too deeply).
    """
    try:
        doc = json.loads(data.decode("utf-8"))
    except ValueError:  # not UTF-8, not JSON
        return None
    except DEPTH_FAILURES:  # nested too deeply for the decoder
        return None
    reason = doc.get("reason") if isinstance(doc, dict) else None
    return reason if isinstance(reason, str) else None


def format_updated(now: datetime | None = None) -> str:
    """Return ``now`` (default: the current time) as UTC ``YYYY-MM-DDTHH:MM:SSZ``.

    A naive ``now`` is taken to be UTC already.
    """
    from datetime import UTC, datetime  # only lock writing needs it: keep checks lean

    moment = datetime.now(UTC) if now is None else now
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def render_lock(files: Mapping[str, str], reason: str, updated: str) -> str:
    """Return the text of a lock: ``reason``, ``updated`` and ``files`` sorted by path.

    Two-space indent and a trailing newline, so that a lock update is a small, readable
    diff. Non-ASCII paths are kept as written; a path byte that is not UTF-8 (a lone
    surrogate from ``os.fsdecode``) is escaped when the text is encoded for writing
    (``jsonio.encode_text``).
    """
    doc = {
        "reason": reason,
        "updated": updated,
        "files": [{"path": path, "sha256": files[path]} for path in sorted(files)],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
