"""Strict receipt parsing and deterministic rendering (``patchlane.formats.receipt``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from patchlane.errors import InputError
from patchlane.formats.receipt import Receipt, ReceiptError, Signature, parse_receipt
from tests.unknownkey import add_json_key

SEED_RECEIPT = Path("/work/shared/seed-examples/receipt.json")
SEED_TEXT = """\
{
  "seed": 20260924,
  "slice_sha256": "hash-of-replay-slice.txt",
  "failed_nodeids": [],
  "skipped_by_freeze": ["tests/test_billing.py::test_invoice_timestamp_order"],
  "host_role": "free-eval"
}
"""
HASH = hashlib.sha256(b"tests/test_billing.py::test_invoice_timestamp_order\n").hexdigest()
HEAD = "a" * 40


def seed_bytes() -> bytes:
    """The seed's receipt, byte for byte (the shared copy when present)."""
    return SEED_RECEIPT.read_bytes() if SEED_RECEIPT.exists() else SEED_TEXT.encode()


def full(**changes: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "seed": 7,
        "slice_sha256": HASH,
        "failed_nodeids": [],
        "skipped_by_freeze": [],
        "host_role": "ci",
        "passed_nodeids": ["tests/test_x.py::test_a"],
        "head": HEAD,
        "started": "2026-09-24T12:00:00Z",
        "finished": "2026-09-24T12:00:05Z",
        "patchlane_version": "0.1.0",
        "split_base": "c" * 40,
    }
    value.update(changes)
    return {k: v for k, v in value.items() if v is not ...}


def parse(value: Any) -> Receipt:
    return parse_receipt(json.dumps(value, indent=2).encode(), "receipt.json")


def refused(value: Any) -> ReceiptError:
    with pytest.raises(ReceiptError) as info:
        parse(value)
    return info.value


def test_the_seed_placeholder_is_refused_naming_slice_sha256_and_its_line() -> None:
    with pytest.raises(ReceiptError) as info:
        parse_receipt(seed_bytes(), "receipt.json")
    assert isinstance(info.value, InputError)
    assert "slice_sha256" in str(info.value)
    assert str(info.value).startswith("receipt.json:3: ")


def test_the_seed_receipt_parses_as_printed_once_the_hash_is_real() -> None:
    data = seed_bytes().replace(b"hash-of-replay-slice.txt", HASH.encode())
    receipt = parse_receipt(data, "receipt.json")
    assert receipt.seed == 20260924
    assert receipt.skipped_by_freeze == ("tests/test_billing.py::test_invoice_timestamp_order",)
    assert receipt.passed_nodeids is None and receipt.head is None and receipt.signature is None


def test_render_is_deterministic_and_round_trips() -> None:
    receipt = parse(full(signature={"payloadType": "t", "keyid": "b" * 64, "sig": "AA=="}))
    data = receipt.render()
    assert data.endswith(b"\n")
    assert parse_receipt(data, "r") == receipt
    assert parse_receipt(data, "r").render() == data
    assert list(json.loads(data))[:5] == list(full())[:5]  # the seed's fields first


def test_the_drawn_hash_seed_round_trips_and_is_signed_with_the_rest() -> None:
    receipt = parse(full(hash_seed=2**32 - 1))
    assert receipt.hash_seed == 2**32 - 1 and receipt.seed == 7
    assert receipt.to_json(signature=False)["hash_seed"] == 2**32 - 1  # the signed payload
    assert parse_receipt(receipt.render(), "r") == receipt
    assert parse(full()).hash_seed is None  # optional: a receipt of an older host


def test_the_canary_round_trips_and_is_signed_with_the_rest() -> None:
    receipt = parse(full(canary_nodeids=["t.py::b", "t.py::a"]))
    assert receipt.canary_nodeids == ("t.py::b", "t.py::a")
    assert receipt.to_json(signature=False)["canary_nodeids"] == ["t.py::b", "t.py::a"]
    assert parse_receipt(receipt.render(), "r") == receipt
    assert parse(full()).canary_nodeids is None  # optional: a host that was not told
    with pytest.raises(ReceiptError, match="listed twice"):
        parse(full(canary_nodeids=["t.py::a", "t.py::a"]))


def test_to_json_without_signature_omits_it_and_absent_fields() -> None:
    receipt = Receipt(7, HASH, (), (), "ci", signature=Signature("t", "b" * 64, "AA=="))
    assert "signature" not in receipt.to_json(signature=False)
    assert set(receipt.to_json(signature=False)) == {
        "seed",
        "slice_sha256",
        "failed_nodeids",
        "skipped_by_freeze",
        "host_role",
    }


@pytest.mark.parametrize(
    ("value", "field"),
    [
        (full(extra=1), "'extra': unknown field"),
        (full(seed=...), "'seed': missing"),
        (full(seed="7"), "'seed'"),
        (full(seed=True), "'seed'"),
        (full(seed=7.0), "'seed'"),
        (full(slice_sha256=HASH.upper()), "'slice_sha256'"),
        (full(slice_sha256=HASH[:-1]), "'slice_sha256'"),
        (full(failed_nodeids="tests/x.py::t"), "'failed_nodeids'"),
        (full(failed_nodeids=[""]), "'failed_nodeids'[0]"),
        (full(failed_nodeids=[1]), "'failed_nodeids'[0]"),
        (full(skipped_by_freeze=["a::b", "a::b"]), "listed twice"),
        (full(passed_nodeids=["a::b\nc"]), "'passed_nodeids'[0]"),
        (full(passed_nodeids=None), "'passed_nodeids'"),
        (full(host_role=""), "'host_role'"),
        (full(host_role=None), "'host_role'"),
        (full(head="HEAD"), "'head'"),
        (full(head="a" * 39), "'head'"),
        (full(started="2026-09-24 12:00:00"), "'started'"),
        (full(started="2026-09-24T12:00:00+00:00"), "'started'"),
        (full(finished="2026-02-30T12:00:00Z"), "'finished'"),
        (full(finished="2026-09-24T11:00:00Z"), "before 'started'"),
        (full(patchlane_version=""), "'patchlane_version'"),
        (full(split_base="main"), "'split_base'"),
        (full(hash_seed=-1), "'hash_seed'"),
        (full(hash_seed=2**32), "'hash_seed'"),
        (full(hash_seed="7"), "'hash_seed'"),
        (full(hash_seed=True), "'hash_seed'"),
        (full(signature="sig"), "'signature'"),
        (full(signature={"payloadType": "t", "keyid": "b" * 64}), "'signature.sig': missing"),
        (full(signature={"payloadType": "t", "keyid": "b" * 64, "sig": "x", "x": 1}), "unknown"),
        (full(signature={"payloadType": "t", "keyid": "xyz", "sig": "x"}), "signature.keyid"),
        ([], "JSON object"),
    ],
)
def test_malformed_receipts_are_refused_naming_the_field(value: Any, field: str) -> None:
    error = refused(value)
    assert field in error.message
    assert error.file == "receipt.json"


def test_the_line_of_the_bad_field_is_named() -> None:
    error = refused(full(head="nope"))
    text = json.dumps(full(head="nope"), indent=2)
    assert error.line == next(i for i, line in enumerate(text.splitlines(), 1) if '"head"' in line)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"seed": 1, "seed": 2}', "duplicate key 'seed'"),
        (b'{"seed": NaN}', "NaN"),
        (b'{"seed": 1e400}', "out of range"),
        (b"{", "invalid JSON"),
        (b'{"host_role": "\xff"}', "not UTF-8"),
    ],
)
def test_not_strict_json_is_refused(data: bytes, message: str | None) -> None:
    with pytest.raises(ReceiptError) as info:
        parse_receipt(data, "receipt.json")
    if message is not None:
        assert message in str(info.value)


def test_a_lone_surrogate_node_id_is_refused() -> None:
    data = json.dumps(full(failed_nodeids=["a.py::\udc80"])).encode()
    with pytest.raises(ReceiptError, match="failed_nodeids"):
        parse_receipt(data, "receipt.json")


def test_fractional_stamps_compare_by_instant() -> None:
    receipt = parse(full(started="2026-09-24T12:00:05.5Z", finished="2026-09-24T12:00:06Z"))
    assert receipt.finished == "2026-09-24T12:00:06Z"
    refused(full(started="2026-09-24T12:00:05.5Z", finished="2026-09-24T12:00:05Z"))


@pytest.mark.parametrize(
    ("at", "field"), [((), "'zz_unknown'"), (("signature",), "'signature.zz_unknown'")]
)
def test_a_rendered_receipt_with_an_unknown_key_is_refused_naming_its_line(
    tmp_path: Path, at: tuple[str, ...], field: str
) -> None:
    receipt = parse(full(signature={"payloadType": "t", "keyid": "b" * 64, "sig": "x"}))
    path = tmp_path / "receipt.json"
    path.write_bytes(receipt.render())
    assert parse_receipt(path.read_bytes(), str(path)) == receipt
    line = add_json_key(path, at)
    with pytest.raises(ReceiptError) as info:
        parse_receipt(path.read_bytes(), str(path))
    assert str(info.value).startswith(f"{path}:{line}: {field}: unknown field")
