"""The receipt a replay host returns (docs/architecture.md §4): strict parsing and rendering.

The required fields are ``{seed, slice_sha256, failed_nodeids, skipped_by_freeze, host_role}``;
the optional ones ``passed_nodeids``, ``skipped_nodeids``, ``head``, ``started``, ``finished``,
``patchlane_version``, ``isolation``, ``split_base``, ``hash_seed`` and ``signature``.
A receipt is the output of a host that is not trusted, so nothing in it is read loosely: unknown
fields, wrong types, duplicate keys, NaN, repeated or empty node ids are all refused, each with a
``ReceiptError`` naming the file, the field and the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from patchlane.errors import InputError
from patchlane.inputs.committed import decode_utf8
from patchlane.inputs.fields import (
    FieldPath,
    Fields,
    json_document,
    printable,
)
from patchlane.inputs.jsonio import JsonValue, dumps_report, encode_text, parse_json_text

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

_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_COMMIT = re.compile(r"(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")
# Seconds precision, optional fraction, always UTC ("Z"): two hosts' stamps compare as text.
_STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?Z\Z")
_STAMP_EXPECTED = "a UTC time YYYY-MM-DDTHH:MM:SSZ"
_ONE_LINE = "a non-empty one-line string"
# What PYTHONHASHSEED accepts (config.MAX_SEED, not imported: it would load the YAML reader).
MAX_HASH_SEED = 2**32 - 1


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
    isolation: str | None = None
    # The merge base whose diff named the patch's own test files, when they ran in a
    # pytest process apart from the base's tests (docs/architecture.md §4); ``None``: one
    # process ran the whole slice.
    split_base: str | None = None
    # The PYTHONHASHSEED (and Hypothesis seed) the run drew, never derived from ``seed``:
    # what reproduces the run (``replay run --hash-seed``); nothing is checked against it.
    hash_seed: int | None = None
    # The slice's node ids that were drawn at random from outside the selection (the
    # canary, docs/architecture.md §4): in the slice like the others, named here so that the
    # receipt says which they were; ``None``: the runner was not told.
    canary_nodeids: tuple[str, ...] | None = None
    signature: Signature | None = None

    def to_json(self, *, signature: bool = True) -> dict[str, JsonValue]:
        """Return the receipt as a JSON object: the required fields first, absent optional
        fields omitted (never ``null``), and without ``signature`` when ``signature`` is false
        (that object is what gets signed)."""
        out: dict[str, JsonValue] = {
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
        for key in (
            "head", "started", "finished", "patchlane_version", "isolation", "split_base",
            "hash_seed",
        ):  # fmt: skip
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.canary_nodeids is not None:
            out["canary_nodeids"] = list(self.canary_nodeids)
        if signature and self.signature is not None:
            out["signature"] = self.signature.to_json()
        return out

    def render(self) -> bytes:
        """Return the receipt file's bytes: deterministic JSON (two-space indent, ``\\n``)."""
        return encode_text(dumps_report(self.to_json()))


def parse_receipt(data: bytes, label: str) -> Receipt:
    """Parse receipt bytes strictly.

    Returns the ``Receipt``. Raises ``ReceiptError`` (naming ``label``, the field and the line)
    for bytes that are not UTF-8, not strict JSON (duplicate keys, NaN), or not a receipt:
    a missing or unknown field, a wrong type, a ``slice_sha256`` that is not 64 lower-case hex
    digits (a placeholder such as ``hash-of-replay-slice.txt`` included), a node id list with an empty or repeated entry.
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
    seed = r.integer("seed")
    digest = r.text(
        "slice_sha256",
        expected="the slice file's sha256 (64 lower-case hex digits)",
        accept=_HEX64.match,
    )
    passed = _nodeids(r, "passed_nodeids") if r.has("passed_nodeids") else None
    skipped = _nodeids(r, "skipped_nodeids") if r.has("skipped_nodeids") else None
    head = None
    if r.get("head") is not None:  # ``"head": null`` is no head
        head = r.text(
            "head", expected="a full commit id (40 or 64 hex digits)", accept=_COMMIT.match
        )
    started = r.text("started", expected=_STAMP_EXPECTED, accept=_is_stamp, default=None)
    finished = r.text("finished", expected=_STAMP_EXPECTED, accept=_is_stamp, default=None)
    if started is not None and finished is not None and _instant(finished) < _instant(started):
        message = f"'finished' ({finished}) is before 'started' ({started})"
        raise doc.error_at(("finished",), message)
    version = r.text("patchlane_version", expected=_ONE_LINE, accept=printable, default=None)
    split_base = r.text(
        "split_base", expected="a full commit id (40 or 64 hex digits)", accept=_COMMIT.match,
        default=None,
    )  # fmt: skip
    hash_seed = r.integer("hash_seed", lo=0, hi=MAX_HASH_SEED, default=None)
    return Receipt(
        seed=seed,
        slice_sha256=digest,
        failed_nodeids=_nodeids(r, "failed_nodeids"),
        skipped_by_freeze=_nodeids(r, "skipped_by_freeze"),
        host_role=r.text("host_role", expected=_ONE_LINE, accept=printable),
        passed_nodeids=passed,
        skipped_nodeids=skipped,
        head=head,
        started=started,
        finished=finished,
        patchlane_version=version,
        isolation=r.choice("isolation", ISOLATION_KINDS, default=None),
        split_base=split_base,
        hash_seed=hash_seed,
        canary_nodeids=_nodeids(r, "canary_nodeids") if r.has("canary_nodeids") else None,
        signature=_signature(r.mapping("signature")) if r.has("signature") else None,
    )


def _field_name(path: FieldPath) -> str:
    """How a receipt's messages name a field: ``'seed'``, ``'failed_nodeids'[3]``,
    ``'signature.keyid'``."""
    if len(path) == 2 and isinstance(path[1], str):
        return f"'{path[0]}.{path[1]}'"
    return "".join(f"[{part}]" if isinstance(part, int) else repr(part) for part in path)


def _nodeids(r: Fields, key: str) -> tuple[str, ...]:
    """A list of unique, non-empty, one-line node ids (``printable``: a lone surrogate,
    ``"\\udcXX"`` in JSON, could be neither a line of a UTF-8 slice nor signed as UTF-8)."""
    return r.text_list(
        key,
        expected="a list of node ids",
        item="a non-empty one-line node id",
        accept=printable,
        duplicate="node id {!r} is listed twice",
    )


def _is_stamp(stamp: str) -> bool:
    """An ISO-8601 UTC time ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z`` that is a real instant."""
    if not _STAMP.match(stamp):
        return False
    try:
        datetime.fromisoformat(stamp[:-1])
    except ValueError:
        return False
    return True


def _instant(stamp: str) -> datetime:
    """The moment a checked stamp names (text order is wrong once fractions appear)."""
    return datetime.fromisoformat(stamp[:-1])


def _signature(sig: Fields) -> Signature:
    sig.only(SIGNATURE_FIELDS, message="unknown field")
    payload_type = sig.text("payloadType", expected="a non-empty string", accept=bool)
    keyid = sig.text("keyid", expected="a non-empty string", accept=bool)
    signed = sig.text("sig", expected="a non-empty string", accept=bool)
    if not _HEX64.match(keyid):
        raise sig.fail("keyid", "expected 64 lower-case hex digits")
    return Signature(payload_type=payload_type, keyid=keyid, sig=signed)


def utc_stamp(moment: datetime | None = None) -> str:
    """Return ``moment`` (default: now) as the receipt's time format, ``YYYY-MM-DDTHH:MM:SSZ``."""
    moment = datetime.now(UTC) if moment is None else moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
