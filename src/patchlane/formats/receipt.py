"""The receipt a replay host returns (docs/architecture.md §4): strict parsing and rendering.

The required fields are ``{seed, slice_sha256, failed_nodeids, skipped_by_freeze, host_role}``;
the optional ones ``passed_nodeids``, ``skipped_nodeids``, ``head``, ``started``, ``finished``,
``patchlane_version``, ``isolation``, ``split_base``, ``hash_seed`` and ``signature``.
A receipt is the output of a host that is not trusted, so nothing in it is read loosely: unknown
fields, wrong types, duplicate keys, NaN, repeated or empty node ids are all refused, each with a
``ReceiptError`` naming the file, the field and the line. ``Receipt`` is the format's model
(``inputs.model``): its writer, its reader and its schema (``receipt_schema``) derive from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from patchlane.errors import InputError
from patchlane.formats.envelope import document_schema
from patchlane.inputs.committed import decode_utf8
from patchlane.inputs.fields import (
    FieldPath,
    Fields,
    json_document,
    printable,
)
from patchlane.inputs.jsonio import JsonValue, dumps_report, encode_text, parse_json_text
from patchlane.inputs.model import Spec, from_fields, schema_parts, spec, to_data

REQUIRED = ("seed", "slice_sha256", "failed_nodeids", "skipped_by_freeze", "host_role")
OPTIONAL = (
    "passed_nodeids",
    "skipped_nodeids",
    "head",
    "started",
    "finished",
    "patchlane_version",
    "isolation",
    "split_base",
    "hash_seed",
    "canary_nodeids",
    "signature",
)
# Which isolation the host's run had (``patchlane.infra.sandbox``: the kernel sandbox, or a named
# fallback).
ISOLATION_KINDS = ("bwrap", "netns", "none")
SIGNATURE_FIELDS = ("payloadType", "keyid", "sig")

_HEX64_PATTERN = "^[0-9a-f]{64}$"
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_COMMIT_PATTERN = "^[0-9a-f]{40}([0-9a-f]{24})?$"
# Seconds precision, optional fraction, always UTC ("Z"): two hosts' stamps compare as text.
_STAMP_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z$"
_STAMP = re.compile(_STAMP_PATTERN)
# What ``printable`` takes, as far as a schema can say: no line break or control character.
_ONE_LINE_PATTERN = "^[^\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029]+$"
_STAMP_EXPECTED = "a UTC time YYYY-MM-DDTHH:MM:SSZ"
_ONE_LINE = "a non-empty one-line string"
# What PYTHONHASHSEED accepts (config.MAX_SEED, not imported: it would load the YAML reader).
MAX_HASH_SEED = 2**32 - 1


class ReceiptError(InputError):
    """A receipt is malformed. The message names the file, the field and (where known) the line."""


@dataclass(frozen=True)
class Signature:
    """A DSSE-style signature: the payload type, the signer's key id and the base64 signature."""

    payload_type: str = field(metadata=spec(key="payloadType", pattern="^.+$"))
    keyid: str = field(metadata=spec(pattern=_HEX64_PATTERN))
    sig: str = field(metadata=spec(pattern="^.+$"))

    def to_json(self) -> dict[str, str]:
        """Return the signature as the JSON object stored in a receipt."""
        return {"payloadType": self.payload_type, "keyid": self.keyid, "sig": self.sig}


def _read_signature(top: Fields, key: str) -> Signature:
    """The ``signature`` object, with the receipt's own wording of its refusals."""
    sig = top.mapping(key)
    sig.only(SIGNATURE_FIELDS, message="unknown field")
    payload_type = sig.text("payloadType", expected="a non-empty string", accept=bool)
    keyid = sig.text("keyid", expected="a non-empty string", accept=bool)
    signed = sig.text("sig", expected="a non-empty string", accept=bool)
    if not _HEX64.match(keyid):
        raise sig.fail("keyid", "expected 64 lower-case hex digits")
    return Signature(payload_type=payload_type, keyid=keyid, sig=signed)


def _is_stamp(stamp: str) -> bool:
    """An ISO-8601 UTC time ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z`` that is a real instant."""
    if not _STAMP.fullmatch(stamp):
        return False
    try:
        datetime.fromisoformat(stamp[:-1])
    except ValueError:
        return False
    return True


def _instant(stamp: str) -> datetime:
    """The moment a checked stamp names (text order is wrong once fractions appear)."""
    return datetime.fromisoformat(stamp[:-1])


# A list of unique, non-empty, one-line node ids (``printable``: a lone surrogate,
# ``"\udcXX"`` in JSON, could be neither a line of a UTF-8 slice nor signed as UTF-8),
# written when the runner said (an empty list included).
def _nodeids(description: str | None = None, *, optional: bool = True) -> dict[str, Spec]:
    return spec(
        expected="a list of node ids",
        item="a non-empty one-line node id",
        pattern=_ONE_LINE_PATTERN,
        accept=printable,
        duplicate="node id {!r} is listed twice",
        write="notnone" if optional else "always",
        null=False,
        description=description,
    )


_COMMIT_ID = "a full commit id (40 or 64 hex digits)"
_STAMPED = spec(
    expected=_STAMP_EXPECTED, pattern=_STAMP_PATTERN, accept=_is_stamp, write="notnone", null=False
)


@dataclass(frozen=True)
class Receipt:
    """A parsed, well-formed receipt (well-formed is not yet believed: see ``verify``)."""

    seed: int
    slice_sha256: str = field(
        metadata=spec(
            expected="the slice file's sha256 (64 lower-case hex digits)", pattern=_HEX64_PATTERN
        )
    )
    failed_nodeids: tuple[str, ...] = field(metadata=_nodeids(optional=False))
    skipped_by_freeze: tuple[str, ...] = field(metadata=_nodeids(optional=False))
    host_role: str = field(
        metadata=spec(expected=_ONE_LINE, pattern=_ONE_LINE_PATTERN, accept=printable)
    )
    passed_nodeids: tuple[str, ...] | None = field(default=None, metadata=_nodeids())
    # Skips and xfails the suite makes on its own: neither evidence nor failure.
    skipped_nodeids: tuple[str, ...] | None = field(
        default=None,
        metadata=_nodeids("skips and xfails the suite makes on its own: neither evidence nor "
                          "failure"),
    )  # fmt: skip
    # ``"head": null`` is no head.
    head: str | None = field(
        default=None, metadata=spec(expected=_COMMIT_ID, pattern=_COMMIT_PATTERN, write="notnone")
    )
    started: str | None = field(default=None, metadata=_STAMPED)
    finished: str | None = field(default=None, metadata=_STAMPED)
    patchlane_version: str | None = field(
        default=None,
        metadata=spec(
            expected=_ONE_LINE, pattern=_ONE_LINE_PATTERN, accept=printable, write="notnone",
            null=False,
        ),
    )  # fmt: skip
    isolation: str | None = field(
        default=None,
        metadata=spec(
            choices=ISOLATION_KINDS, write="notnone", null=False,
            description="which isolation the run had: bwrap (the kernel sandbox), netns (a "
            "network namespace only) or none",
        ),
    )  # fmt: skip
    # The merge base whose diff named the patch's own test files, when they ran in a
    # pytest process apart from the base's tests (docs/architecture.md §4); ``None``: one
    # process ran the whole slice.
    split_base: str | None = field(
        default=None,
        metadata=spec(
            expected=_COMMIT_ID, pattern=_COMMIT_PATTERN, write="notnone", null=False,
            description="the merge base whose diff named the patch's own test files, run in a "
            "pytest process apart from the base's tests; absent: one process ran the whole "
            "slice",
        ),
    )  # fmt: skip
    # The PYTHONHASHSEED (and Hypothesis seed) the run drew, never derived from ``seed``:
    # what reproduces the run (``replay run --hash-seed``); nothing is checked against it.
    hash_seed: int | None = field(
        default=None,
        metadata=spec(
            lo=0, hi=MAX_HASH_SEED, write="notnone", null=False,
            description="the PYTHONHASHSEED (and Hypothesis seed) the run drew from "
            "os.urandom, never derived from the public seed; replay run --hash-seed N "
            "reproduces the run",
        ),
    )  # fmt: skip
    # The slice's node ids that were drawn at random from outside the selection (the
    # canary, docs/architecture.md §4): in the slice like the others, named here so that the
    # receipt says which they were; ``None``: the runner was not told.
    canary_nodeids: tuple[str, ...] | None = field(
        default=None,
        metadata=_nodeids("the slice's node ids drawn at random from the tests outside the "
                          "selection (the canary); when present, exactly the ones the gate "
                          "drew"),
    )  # fmt: skip
    signature: Signature | None = field(
        default=None, metadata=spec(write="notnone", null=False, read=_read_signature)
    )

    def check_read(self, top: Fields) -> None:
        """Refuse a receipt whose ``finished`` is before its ``started``. Raises
        ``ReceiptError``."""
        started, finished = self.started, self.finished
        if started is not None and finished is not None and _instant(finished) < _instant(started):
            message = f"'finished' ({finished}) is before 'started' ({started})"
            raise top.doc.error_at((*top.path, "finished"), message)

    def to_json(self, *, signature: bool = True) -> dict[str, JsonValue]:
        """Return the receipt as a JSON object: the required fields first, absent optional
        fields omitted (never ``null``), and without ``signature`` when ``signature`` is false
        (that object is what gets signed)."""
        out = to_data(self)
        if not signature:
            out.pop("signature", None)
        return out  # type: ignore[return-value]

    def render(self) -> bytes:
        """Return the receipt file's bytes: deterministic JSON (two-space indent, ``\\n``)."""
        return encode_text(dumps_report(self.to_json()))


def parse_receipt(data: bytes, label: str) -> Receipt:
    """Parse receipt bytes strictly.

    Returns the ``Receipt``. Raises ``ReceiptError`` (naming ``label``, the field and the line)
    for bytes that are not UTF-8, not strict JSON (duplicate keys, NaN), or not a receipt:
    a missing or unknown field, a wrong type, a ``slice_sha256`` that is not 64 lower-case hex
    digits (a placeholder such as ``hash-of-replay-slice.txt`` included), a node id list with
    an empty or repeated entry, a ``finished`` before ``started``.
    """
    text = decode_utf8(data, label, ReceiptError)
    value = parse_json_text(text, label, ReceiptError)
    doc = json_document(text, label, ReceiptError, name=_field_name)
    if not isinstance(value, dict):
        raise doc.error_at((), f"a receipt must be a JSON object, not {doc.kind(value)}")
    r = doc.fields(value)
    r.only(
        REQUIRED + OPTIONAL,
        message=f"unknown field (a receipt has {', '.join(REQUIRED + OPTIONAL)})",
    )
    r.require(*REQUIRED)
    return from_fields(Receipt, r)


def receipt_schema() -> dict[str, object]:
    """Return the JSON Schema of ``receipt.json``, derived from ``Receipt``."""
    properties, required = schema_parts(Receipt)
    return document_schema("receipt.json", "patchlane replay receipt", dict(properties), required)


def _field_name(path: FieldPath) -> str:
    """How a receipt's messages name a field: ``'seed'``, ``'failed_nodeids'[3]``,
    ``'signature.keyid'``."""
    if len(path) == 2 and isinstance(path[1], str):
        return f"'{path[0]}.{path[1]}'"
    return "".join(f"[{part}]" if isinstance(part, int) else repr(part) for part in path)


def utc_stamp(moment: datetime | None = None) -> str:
    """Return ``moment`` (default: now) as the receipt's time format, ``YYYY-MM-DDTHH:MM:SSZ``."""
    moment = datetime.now(UTC) if moment is None else moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
