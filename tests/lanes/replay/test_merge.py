"""``merge_receipts``: shard receipts combine into one that verifies against the whole slice."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from patchlane.formats import slicefile
from patchlane.formats.receipt import Receipt
from patchlane.lanes.replay import signing
from patchlane.lanes.replay.merge import Shard, merge_receipts
from patchlane.lanes.replay.verify import Expectations, verify_receipt
from tests.lanes.replay.test_verify import freeze_record, freeze_report, parsed

A, B, C, D = (f"tests/test_x.py::test_{n}" for n in "abcd")
WHOLE = slicefile.render([A, B, C, D])
ONE, TWO = slicefile.render([A, C]), slicefile.render([B, D])
HEAD = "e" * 40


def shard_receipt(sub: bytes, **changes: Any) -> Receipt:
    """A receipt for sub-slice ``sub`` where every node passed."""
    ids = slicefile.parse(sub, "sub")
    receipt = Receipt(
        seed=7,
        slice_sha256=hashlib.sha256(sub).hexdigest(),
        failed_nodeids=(),
        skipped_by_freeze=(),
        host_role="shard",
        passed_nodeids=ids,
        head=HEAD,
        started="2026-09-24T12:00:00Z",
        finished="2026-09-24T12:00:10Z",
        patchlane_version="0.1.0",
    )
    return replace(receipt, **changes)


def shard(sub: bytes, receipt: Receipt | bytes, name: str) -> Shard:
    data = receipt.render() if isinstance(receipt, Receipt) else receipt
    return Shard(f"{name}.txt", sub, f"{name}.json", data)


def two_shards(**second: Any) -> list[Shard]:
    first = shard_receipt(
        ONE,
        passed_nodeids=(A,),
        skipped_by_freeze=(C,),
        host_role="gpu",
        started="2026-09-24T11:59:00Z",
    )
    changes = {"passed_nodeids": (D,), "failed_nodeids": (B,), "finished": "2026-09-24T12:05:00Z"}
    other = shard_receipt(TWO, **{**changes, **second})
    return [shard(ONE, first, "one"), shard(TWO, other, "two")]


def test_two_shards_merge_into_a_receipt_that_verifies() -> None:
    merged = merge_receipts(WHOLE, two_shards(), public_key=None)
    receipt = merged.receipt
    assert receipt is not None and merged.refusals == ()
    assert receipt.slice_sha256 == hashlib.sha256(WHOLE).hexdigest()
    assert receipt.passed_nodeids == (A, D)
    assert receipt.failed_nodeids == (B,)
    assert receipt.skipped_by_freeze == (C,)
    assert receipt.host_role == "gpu+shard"
    assert (receipt.started, receipt.finished) == ("2026-09-24T11:59:00Z", "2026-09-24T12:05:00Z")
    assert (receipt.seed, receipt.head) == (7, HEAD)
    v = verify_receipt(
        WHOLE,
        receipt.render(),
        parsed(freeze_report(freeze_record(C))),
        Expectations(
            seed=7,
            head=HEAD,
            require_signature=False,
            public_key=None,
        ),
    )
    assert (v.outcome, v.failed, v.skipped) == ("fail", (B,), (C,))


def test_equal_roles_are_not_repeated() -> None:
    shards = [shard(ONE, shard_receipt(ONE), "one"), shard(TWO, shard_receipt(TWO), "two")]
    merged = merge_receipts(WHOLE, shards, public_key=None).receipt
    assert merged is not None and merged.host_role == "shard"


@pytest.mark.parametrize(("first", "second", "merged"), [(5, 5, 5), (5, 6, None), (5, None, None)])
def test_the_merged_receipt_has_a_hash_seed_only_when_every_shard_drew_the_same(
    first: int, second: int | None, merged: int | None
) -> None:
    shards = [
        shard(ONE, shard_receipt(ONE, hash_seed=first), "one"),
        shard(TWO, shard_receipt(TWO, hash_seed=second), "two"),
    ]
    receipt = merge_receipts(WHOLE, shards, public_key=None).receipt
    assert receipt is not None and receipt.hash_seed == merged


def refusals(shards: list[Shard], whole: bytes = WHOLE, **kwargs: Any) -> str:
    merged = merge_receipts(whole, shards, **{"public_key": None, **kwargs})
    assert merged.receipt is None
    return "\n".join(merged.refusals)


def test_a_shard_with_a_wrong_hash_is_refused() -> None:
    shards = two_shards(slice_sha256="0" * 64)
    assert "shard two.json: slice_sha256" in refusals(shards)


def test_a_shard_missing_a_node_is_refused() -> None:
    assert "missing 'tests/test_x.py::test_d'" in refusals(two_shards(passed_nodeids=()))


def test_a_shard_without_passed_nodeids_is_refused() -> None:
    assert "cannot show that it covered" in refusals(two_shards(passed_nodeids=None))


def test_a_malformed_shard_receipt_is_refused() -> None:
    shards = [shard(ONE, shard_receipt(ONE), "one"), shard(TWO, b"{}", "two")]
    assert "shard two.json: two.json" in refusals(shards)


def test_shards_with_different_seeds_or_heads_are_refused() -> None:
    assert "different seeds" in refusals(two_shards(seed=8))
    assert "different heads" in refusals(two_shards(head="f" * 40))
    assert "different heads" in refusals(two_shards(head=None))


def test_overlapping_sub_slices_are_refused() -> None:
    overlap = slicefile.render([A, B, D])
    shards = [
        shard(ONE, shard_receipt(ONE), "one"),
        shard(overlap, shard_receipt(overlap), "two"),
    ]
    assert "is in two shards" in refusals(shards)


def test_an_incomplete_partition_is_refused() -> None:
    shards = [shard(ONE, shard_receipt(ONE), "one")]
    assert "no shard holds 2 node id(s)" in refusals(shards)


def test_a_sub_slice_with_foreign_nodes_is_refused() -> None:
    extra = slicefile.render([B, D, "tests/test_x.py::test_e"])
    shards = [shard(ONE, shard_receipt(ONE), "one"), shard(extra, shard_receipt(extra), "two")]
    assert "not in replay-slice.txt" in refusals(shards)


def test_no_shards_is_refused() -> None:
    assert "no shards" in refusals([])


def test_with_a_public_key_every_shard_must_be_signed_by_it() -> None:
    key = Ed25519PrivateKey.generate()
    signed = [
        shard(ONE, signing.sign(shard_receipt(ONE), key), "one"),
        shard(TWO, signing.sign(shard_receipt(TWO), key), "two"),
    ]
    assert merge_receipts(WHOLE, signed, public_key=key.public_key()).receipt is not None
    unsigned = [signed[0], shard(TWO, shard_receipt(TWO), "two")]
    assert "not signed" in refusals(unsigned, public_key=key.public_key())
    other = Ed25519PrivateKey.generate().public_key()
    assert "another key" in refusals(signed, public_key=other)


def test_a_malformed_sub_slice_is_an_input_error() -> None:
    with pytest.raises(slicefile.SliceError):
        merge_receipts(WHOLE, [shard(b"no newline", shard_receipt(ONE), "one")], public_key=None)
