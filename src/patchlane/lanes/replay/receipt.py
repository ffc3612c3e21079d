"""The receipt a replay host returns (DESIGN.md §4 "Receipt"): strict parsing and rendering.

The seed's shape ``{seed, slice_sha256, failed_nodeids, skipped_by_freeze, host_role}`` is valid
as printed once its placeholder hash is replaced by a real one; patchlane adds the optional
``passed_nodeids``, ``head``, ``started``, ``finished``, ``patchlane_version`` and ``signature``.
A receipt is the output of a host that is not trusted, so nothing in it is read loosely: unknown
fields, wrong types, duplicate keys, NaN, repeated or empty node ids are all refused, each with a
``ReceiptError`` naming the file, the field and the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from patchlane.errors import InputError
from patchlane.inputs.fields import kind_of
from patchlane.inputs.jsonio import JsonPath, dumps_report, encode_text, line_for, parse_json_text

REQUIRED = ("seed", "slice_sha256", "failed_nodeids", "skipped_by_freeze", "host_role")
OPTIONAL = (
    "passed_nodeids",
    "skipped_nodeids",
    "head",
    "started",
    "finished",
    "patchlane_version",
    "signature",
)
SIGNATURE_FIELDS = ("payloadType", "keyid", "sig")

_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_COMMIT = re.compile(r"(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")
# Seconds precision, optional fraction, always UTC ("Z"): two hosts' stamps compare as text.
_STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?Z\Z")


class ReceiptError(InputError):
    """A receipt is malformed. The message names the file, the field and (where known) the line."""


@dataclass(frozen=True)
class Signature:
    """A DSSE-style signature: the payload type, the signer's key id and the base64 signature."""

    payload_type: str
    keyid: str
    sig: str

    def to_json(self) -> dict[str, str]:
        """Return the signature as the JSON object stored in a receipt."""
        return {"payloadType": self.payload_type, "keyid": self.keyid, "sig": self.sig}


@dataclass(frozen=True)
class Receipt:
    """A parsed, well-formed receipt (well-formed is not yet believed: see ``verify``)."""

    seed: int
    slice_sha256: str
    failed_nodeids: tuple[str, ...]
    skipped_by_freeze: tuple[str, ...]
    host_role: str
    passed_nodeids: tuple[str, ...] | None = None
    # Skips and xfails the suite makes on its own: neither evidence nor failure.
    skipped_nodeids: tuple[str, ...] | None = None
    head: str | None = None
    started: str | None = None
    finished: str | None = None
    patchlane_version: str | None = None
    signature: Signature | None = None

    def to_json(self, *, signature: bool = True) -> dict[str, Any]:
        """Return the receipt as a JSON object: the seed's fields first, absent optional
        fields omitted (never ``null``), and without ``signature`` when ``signature`` is false
        (that object is what gets signed)."""
        out: dict[str, Any] = {
            "seed": self.seed,
            "slice_sha256": self.slice_sha256,
            "failed_nodeids": list(self.failed_nodeids),
            "skipped_by_freeze": list(self.skipped_by_freeze),
            "host_role": self.host_role,
        }
        if self.passed_nodeids is not None:
            out["passed_nodeids"] = list(self.passed_nodeids)
        if self.skipped_nodeids is not None:
            out["skipped_nodeids"] = list(self.skipped_nodeids)
        for key in ("head", "started", "finished", "patchlane_version"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if signature and self.signature is not None:
            out["signature"] = self.signature.to_json()
        return out

    def render(self) -> bytes:
        """Return the receipt file's bytes: deterministic JSON (two-space indent, ``\\n``)."""
        return encode_text(dumps_report(self.to_json()))


class _Bad(Exception):
    """A field is wrong; ``where`` is its JSON path (for the line number)."""

    def __init__(self, where: JsonPath, message: str) -> None:
        super().__init__(message)
        self.where = where
        self.message = message


def parse_receipt(data: bytes, label: str) -> Receipt:
    """Parse receipt bytes strictly.

    Returns the ``Receipt``. Raises ``ReceiptError`` (naming ``label``, the field and the line)
    for bytes that are not UTF-8, not strict JSON (duplicate keys, NaN), or not a receipt:
    a missing or unknown field, a wrong type, a ``slice_sha256`` that is not 64 lower-case hex
    digits (the seed's placeholder included), a node id list with an empty or repeated entry.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ReceiptError(label, f"not UTF-8 (byte {e.start})", line) from None
    value = parse_json_text(text, label, ReceiptError)
    try:
        return _receipt(value)
    except _Bad as e:
        # The line is found by a second, position-recording pass, paid only on bad input.
        raise ReceiptError(label, e.message, line_for(text, e.where)) from None


def _receipt(value: Any) -> Receipt:
    if not isinstance(value, dict):
        raise _Bad((), f"a receipt must be a JSON object, not {kind_of(value, json=True)}")
    for key in value:
        if key not in REQUIRED and key not in OPTIONAL:
            raise _Bad(
                (key,), f"{key!r}: unknown field (a receipt has {', '.join(REQUIRED + OPTIONAL)})"
            )
    for key in REQUIRED:
        if key not in value:
            raise _Bad((), f"{key!r}: missing")
    seed = value["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise _Bad(("seed",), f"'seed': expected an integer, got {kind_of(seed, json=True)}")
    digest = value["slice_sha256"]
    if not isinstance(digest, str) or not _HEX64.match(digest):
        raise _Bad(
            ("slice_sha256",),
            f"'slice_sha256': expected the slice file's sha256 (64 lower-case hex digits), "
            f"got {kind_of(digest, json=True)}",
        )
    passed = _nodeids(value, "passed_nodeids") if "passed_nodeids" in value else None
    skipped = _nodeids(value, "skipped_nodeids") if "skipped_nodeids" in value else None
    head = value.get("head")
    if head is not None and (not isinstance(head, str) or not _COMMIT.match(head)):
        raise _Bad(
            ("head",),
            f"'head': expected a full commit id (40 or 64 hex digits), got {kind_of(head, json=True)}",
        )
    started = _stamp(value, "started")
    finished = _stamp(value, "finished")
    if started is not None and finished is not None and _instant(finished) < _instant(started):
        raise _Bad(("finished",), f"'finished' ({finished}) is before 'started' ({started})")
    version = value.get("patchlane_version")
    if "patchlane_version" in value:
        version = _text(value["patchlane_version"], ("patchlane_version",))
    return Receipt(
        seed=seed,
        slice_sha256=digest,
        failed_nodeids=_nodeids(value, "failed_nodeids"),
        skipped_by_freeze=_nodeids(value, "skipped_by_freeze"),
        host_role=_text(value["host_role"], ("host_role",)),
        passed_nodeids=passed,
        skipped_nodeids=skipped,
        head=head,
        started=started,
        finished=finished,
        patchlane_version=version,
        signature=_signature(value["signature"]) if "signature" in value else None,
    )


def _text(value: Any, where: JsonPath) -> str:
    """A non-empty one-line string (it is shown on a terminal line).

    ``isprintable`` also refuses a lone surrogate (``"\\udcXX"`` in JSON), which could be
    neither a line of a UTF-8 slice nor signed as UTF-8.
    """
    name = str(where[-1])
    if not isinstance(value, str) or not value or not value.isprintable():
        raise _Bad(
            where,
            f"{name!r}: expected a non-empty one-line string, got {kind_of(value, json=True)}",
        )
    return value


def _nodeids(value: dict[str, Any], key: str) -> tuple[str, ...]:
    """A list of unique, non-empty, one-line node ids."""
    items = value[key]
    if not isinstance(items, list):
        raise _Bad((key,), f"{key!r}: expected a list of node ids, got {kind_of(items, json=True)}")
    seen: set[str] = set()
    for index, item in enumerate(items):
        if not isinstance(item, str) or not item or not item.isprintable():
            raise _Bad(
                (key, index),
                f"{key!r}[{index}]: expected a non-empty one-line node id, got {kind_of(item, json=True)}",
            )
        if item in seen:
            raise _Bad((key, index), f"{key!r}[{index}]: node id {item!r} is listed twice")
        seen.add(item)
    return tuple(items)


def _stamp(value: dict[str, Any], key: str) -> str | None:
    """An ISO-8601 UTC time ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z`` that is a real instant."""
    if key not in value:
        return None
    stamp = value[key]
    if isinstance(stamp, str) and _STAMP.match(stamp):
        try:
            datetime.fromisoformat(stamp[:-1])
        except ValueError:
            pass
        else:
            return stamp
    raise _Bad(
        (key,),
        f"{key!r}: expected a UTC time YYYY-MM-DDTHH:MM:SSZ, got {kind_of(stamp, json=True)}",
    )


def _instant(stamp: str) -> datetime:
    """The moment a checked stamp names (text order is wrong once fractions appear)."""
    return datetime.fromisoformat(stamp[:-1])


def _signature(value: Any) -> Signature:
    if not isinstance(value, dict):
        raise _Bad(
            ("signature",), f"'signature': expected an object, got {kind_of(value, json=True)}"
        )
    for key in value:
        if key not in SIGNATURE_FIELDS:
            raise _Bad(("signature", key), f"'signature.{key}': unknown field")
    for key in SIGNATURE_FIELDS:
        if key not in value:
            raise _Bad(("signature",), f"'signature.{key}': missing")
        if not isinstance(value[key], str) or not value[key]:
            raise _Bad(
                ("signature", key),
                f"'signature.{key}': expected a non-empty string, got {kind_of(value[key], json=True)}",
            )
    if not _HEX64.match(value["keyid"]):
        raise _Bad(("signature", "keyid"), "'signature.keyid': expected 64 lower-case hex digits")
    return Signature(payload_type=value["payloadType"], keyid=value["keyid"], sig=value["sig"])


def utc_stamp(moment: datetime | None = None) -> str:
    """Return ``moment`` (default: now) as the receipt's time format, ``YYYY-MM-DDTHH:MM:SSZ``."""
    moment = datetime.now(UTC) if moment is None else moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
