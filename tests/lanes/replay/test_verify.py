"""Every refusal rule of ``verify_receipt``, each with a receipt that differs in exactly that
respect from one that verifies; real Ed25519 keys for the signature rules."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from patchlane.errors import ReportError
from patchlane.formats.freeze_report import FreezeReport
from patchlane.formats.receipt import Receipt
from patchlane.formats.slicefile import SliceError
from patchlane.lanes.replay import signing
from patchlane.lanes.replay.verify import Expectations, Verification, replay_report, verify_receipt

A, B, C, D = (f"tests/test_x.py::test_{n}" for n in "abcd")
SLICE = f"{A}\n{B}\n{C}\n".encode()
SEED = 20260924
HEAD = "c" * 40
SEED_RECEIPT = Path("/work/shared/seed-examples/receipt.json")
SEED_NODE = "tests/test_billing.py::test_invoice_timestamp_order"


def freeze_record(
    nodeid: str, freeze_id: str = "f1", *, in_play: bool = True, ok: bool = True
) -> dict[str, Any]:
    """A freeze report record whose ``failed_rules`` agree with ``in_play`` and ``ok``."""
    rules = ([] if in_play else [5]) + ([] if ok else [1])
    return {
        "id": freeze_id,
        "nodeid": nodeid,
        "expires": "2026-10-08",
        "in_play": in_play,
        "ok": ok,
        "failed_rules": rules,
    }


def freeze_report(*records: dict[str, Any], status: str = "pass") -> dict[str, Any]:
    """A well-formed freeze report; ``skippable`` is its in-play, ok node ids."""
    return {
        "lane": "freeze",
        "status": status,
        "reason": "test",
        "records": list(records),
        "skippable": [r["nodeid"] for r in records if r["in_play"] and r["ok"]],
    }


def parsed(report: dict[str, Any]) -> FreezeReport:
    """A freeze report as its one reader reads it (what the verifier is given)."""
    return FreezeReport.from_json(report, "freeze-report.json")


def good(**changes: Any) -> Receipt:
    """A receipt for SLICE that verifies: A passed, B failed, C skipped by a granted freeze."""
    base = Receipt(
        seed=SEED,
        slice_sha256=hashlib.sha256(SLICE).hexdigest(),
        failed_nodeids=(B,),
        skipped_by_freeze=(C,),
        host_role="ci",
        passed_nodeids=(A,),
        head=HEAD,
        started="2026-09-24T12:00:00Z",
        finished="2026-09-24T12:00:01Z",
        patchlane_version="0.1.0",
    )
    return replace(base, **changes)


def check(
    receipt: Receipt | bytes,
    *,
    freeze: dict[str, Any] | None = None,
    slice_bytes: bytes = SLICE,
    seed: int = SEED,
    head: str | None = HEAD,
    require_signature: bool = False,
    public_key: Any = None,
) -> Verification:
    data = receipt.render() if isinstance(receipt, Receipt) else receipt
    return verify_receipt(
        slice_bytes,
        data,
        parsed(freeze if freeze is not None else freeze_report(freeze_record(C))),
        Expectations(
            seed=seed,
            head=head,
            require_signature=require_signature,
            public_key=public_key,
        ),
    )


def refusal(receipt: Receipt | bytes, **kwargs: Any) -> str:
    """Verify, expect exactly one refusal, return it."""
    v = check(receipt, **kwargs)
    assert v.outcome == "refused", v
    assert len(v.reasons) == 1, v.reasons
    return v.reasons[0]


def test_the_baseline_verifies_with_a_failure() -> None:
    v = check(good())
    assert v.outcome == "fail"
    assert v.failed == (B,) and v.skipped == (C,)
    assert v.receipt_sha256 == hashlib.sha256(good().render()).hexdigest()


def test_a_clean_receipt_passes() -> None:
    v = check(good(failed_nodeids=(), passed_nodeids=(A, B)))
    assert (v.outcome, v.reasons) == ("pass", ())


def test_a_receipt_without_passed_nodeids_is_checked_without_coverage() -> None:
    assert check(good(passed_nodeids=None, failed_nodeids=())).outcome == "pass"


def test_a_different_slice_hash_is_refused() -> None:
    assert "slice_sha256" in refusal(good(slice_sha256="0" * 64))


def test_a_different_seed_is_refused() -> None:
    assert "seed 1 is not the expected seed" in refusal(good(seed=1))


@pytest.mark.parametrize("hash_seed", [None, 0, SEED, 2**32 - 1])
def test_whatever_hash_seed_the_run_drew_verifies_and_reaches_the_report(
    hash_seed: int | None,
) -> None:
    # Drawn by the host, never derived from the seed: nothing is checked against it.
    v = check(good(failed_nodeids=(), passed_nodeids=(A, B), hash_seed=hash_seed))
    assert (v.outcome, v.reasons) == ("pass", ())
    report = replay_report(v, slice_sha256=hashlib.sha256(SLICE).hexdigest(), seed=SEED, head=HEAD)
    assert report.hash_seed == hash_seed
    assert report.to_json().get("hash_seed") == hash_seed


def test_a_different_head_is_refused() -> None:
    assert "head" in refusal(good(head="d" * 40))


def test_no_head_in_the_receipt_is_not_checked() -> None:
    assert check(good(head=None)).outcome == "fail"


def test_a_failed_node_outside_the_slice_is_refused() -> None:
    assert "failed_nodeids lists node ids that are not in the slice" in refusal(
        good(failed_nodeids=(B, D), passed_nodeids=None)
    )


def test_a_skipped_node_outside_the_slice_is_refused() -> None:
    freeze = freeze_report(freeze_record(C), freeze_record(D, "f2"))
    reason = refusal(good(skipped_by_freeze=(C, D), passed_nodeids=None), freeze=freeze)
    assert "skipped_by_freeze lists node ids that are not in the slice" in reason


@pytest.mark.parametrize(
    "freeze",
    [
        freeze_report(),  # not frozen at all
        freeze_report(freeze_record(C, in_play=False)),  # frozen, but not in play
        freeze_report(freeze_record(C, ok=False), status="fail"),  # in play, failing an audit
        freeze_report(freeze_record(C), status="error"),  # a red audit grants nothing
    ],
)
def test_a_skip_that_is_not_an_in_play_passing_freeze_is_refused(freeze: dict[str, Any]) -> None:
    assert "not an in-play, passing freeze" in refusal(good(), freeze=freeze)


def test_a_passed_node_outside_the_slice_is_refused() -> None:
    reason = refusal(good(passed_nodeids=(A, D)))
    assert "passed_nodeids lists node ids that are not in the slice" in reason


def test_lists_that_do_not_cover_the_slice_are_refused() -> None:
    assert "missing 'tests/test_x.py::test_a'" in refusal(good(passed_nodeids=()))


@pytest.mark.parametrize(
    ("changes", "pair"),
    [
        ({"passed_nodeids": (A, B)}, "passed_nodeids and failed_nodeids"),
        ({"passed_nodeids": (A, C)}, "passed_nodeids and skipped_by_freeze"),
        ({"failed_nodeids": (B, C)}, "failed_nodeids and skipped_by_freeze"),
    ],
)
def test_overlapping_lists_are_refused(changes: dict[str, Any], pair: str) -> None:
    assert pair in refusal(good(**changes))


def test_an_empty_slice_is_never_evidence() -> None:
    empty = good(
        slice_sha256=hashlib.sha256(b"").hexdigest(),
        failed_nodeids=(),
        skipped_by_freeze=(),
        passed_nodeids=(),
    )
    assert "empty slice" in refusal(empty, slice_bytes=b"")


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b'{"seed": 1, "seed": 1}',
        json.dumps({**good().to_json(), "note": "trust me"}).encode(),
        json.dumps({**good().to_json(), "seed": float("nan")}).encode(),
    ],
)
def test_a_malformed_receipt_is_refused_not_an_input_error(data: bytes) -> None:
    v = check(data)
    assert v.outcome == "refused"
    assert v.reasons[0].startswith("receipt.json")
    assert v.receipt_sha256 == hashlib.sha256(data).hexdigest()
    assert v.receipt is None


def test_several_problems_are_all_listed() -> None:
    v = check(good(seed=1, head="d" * 40, slice_sha256="0" * 64))
    assert v.outcome == "refused" and len(v.reasons) == 3


def test_a_malformed_slice_is_the_callers_input_error() -> None:
    with pytest.raises(SliceError):
        check(good(), slice_bytes=f"{B}\n{A}\n".encode())


def test_a_malformed_freeze_report_is_the_callers_error() -> None:
    # It never reaches the verifier: its one reader refuses it, naming the file.
    with pytest.raises(ReportError, match=r"freeze-report\.json: missing key 'status'"):
        check(good(), freeze={"lane": "freeze"})


# --- signatures ---------------------------------------------------------------------------------


def test_a_signature_required_and_valid_passes() -> None:
    key = Ed25519PrivateKey.generate()
    v = check(signing.sign(good(), key), require_signature=True, public_key=key.public_key())
    assert (v.outcome, v.signature) == ("fail", "verified")


def test_a_signature_required_but_missing_is_refused() -> None:
    key = Ed25519PrivateKey.generate()
    reason = refusal(good(), require_signature=True, public_key=key.public_key())
    assert "a signed receipt is required" in reason


def test_a_signature_required_without_a_public_key_is_refused() -> None:
    signed = signing.sign(good(), Ed25519PrivateKey.generate())
    assert "--public-key" in refusal(signed, require_signature=True)


def test_an_optional_signature_absent_or_unchecked_is_fine() -> None:
    assert check(good()).signature == "absent"
    signed = signing.sign(good(), Ed25519PrivateKey.generate())
    assert check(signed).signature == "not_checked"


def test_a_bad_signature_is_refused_even_when_not_required() -> None:
    key = Ed25519PrivateKey.generate()
    tampered = replace(signing.sign(good(), key), failed_nodeids=(), passed_nodeids=(A, B))
    assert "does not match" in refusal(tampered, public_key=key.public_key())


def test_a_signature_by_another_key_is_refused() -> None:
    signed = signing.sign(good(), Ed25519PrivateKey.generate())
    other = Ed25519PrivateKey.generate().public_key()
    assert "another key" in refusal(signed, require_signature=True, public_key=other)


# --- the seed's receipt -------------------------------------------------------------------------


def seed_receipt() -> bytes:
    from tests.formats.test_receipt import seed_bytes

    return seed_bytes()


@pytest.mark.parametrize(
    ("others", "outcome"),
    [
        # The seed's slice holds only the frozen node: nothing passed, which is not evidence.
        ((), "no_evidence"),
        # Beside a node it does not list (the seed's shape: not listed = passed), it passes.
        (("tests/test_billing.py::test_a",), "pass"),
    ],
)
def test_the_seed_receipt_verifies_as_printed_with_a_real_hash(
    others: tuple[str, ...], outcome: str
) -> None:
    slice_bytes = "".join(f"{n}\n" for n in sorted([SEED_NODE, *others])).encode()
    data = seed_receipt().replace(
        b"hash-of-replay-slice.txt", hashlib.sha256(slice_bytes).hexdigest().encode()
    )
    v = verify_receipt(
        slice_bytes,
        data,
        parsed(freeze_report(freeze_record(SEED_NODE))),
        Expectations(
            seed=20260924,
            head=HEAD,
            require_signature=False,
            public_key=None,
        ),
    )
    assert (v.outcome, v.skipped) == (outcome, (SEED_NODE,))


def test_a_receipt_where_every_node_was_skipped_by_the_suite_is_no_evidence() -> None:
    slice_bytes = b"t/a.py::x\nt/a.py::y\n"
    receipt = {
        "seed": 1,
        "slice_sha256": hashlib.sha256(slice_bytes).hexdigest(),
        "failed_nodeids": [],
        "skipped_by_freeze": [],
        "host_role": "h",
        "passed_nodeids": [],
        "skipped_nodeids": ["t/a.py::x", "t/a.py::y"],
    }
    v = verify_receipt(
        slice_bytes,
        json.dumps(receipt).encode(),
        None,
        Expectations(
            seed=1,
            head=None,
            require_signature=False,
            public_key=None,
        ),
    )
    assert v.outcome == "no_evidence" and "no node passed" in v.reasons[0]
    assert v.suite_skipped == ("t/a.py::x", "t/a.py::y")


def test_suite_skips_must_lie_in_the_slice_and_count_for_coverage() -> None:
    slice_bytes = b"t/a.py::x\nt/a.py::y\n"
    base = {
        "seed": 1,
        "slice_sha256": hashlib.sha256(slice_bytes).hexdigest(),
        "failed_nodeids": [],
        "skipped_by_freeze": [],
        "host_role": "h",
        "passed_nodeids": ["t/a.py::x"],
    }

    def outcome(**extra: object) -> tuple[str, tuple[str, ...]]:
        v = verify_receipt(
            slice_bytes,
            json.dumps({**base, **extra}).encode(),
            None,
            Expectations(
                seed=1,
                head=None,
                require_signature=False,
                public_key=None,
            ),
        )
        return v.outcome, v.reasons

    assert outcome(skipped_nodeids=["t/a.py::y"]) == ("pass", ())
    assert outcome()[0] == "refused"  # t/a.py::y is nowhere
    state, reasons = outcome(skipped_nodeids=["t/a.py::y", "t/z.py::q"])
    assert state == "refused" and "skipped_nodeids" in reasons[0]
    state, reasons = outcome(skipped_nodeids=["t/a.py::x", "t/a.py::y"])
    assert state == "refused" and any("both list" in r for r in reasons)


def test_the_seed_placeholder_is_refused_naming_slice_sha256() -> None:
    v = verify_receipt(
        f"{SEED_NODE}\n".encode(),
        seed_receipt(),
        parsed(freeze_report(freeze_record(SEED_NODE))),
        Expectations(
            seed=20260924,
            head=None,
            require_signature=False,
            public_key=None,
        ),
    )
    assert v.outcome == "refused" and "slice_sha256" in v.reasons[0]


# --- the report ---------------------------------------------------------------------------------


def test_replay_report_shapes() -> None:
    digest = hashlib.sha256(SLICE).hexdigest()
    fail = replay_report(check(good()), slice_sha256=digest, seed=SEED, head=HEAD).to_json()
    assert fail["lane"] == "replay" and fail["status"] == "fail" and fail["failed"] == [B]
    assert fail["skipped_by_freeze"] == [C] and fail["refusals"] == []
    refused = replay_report(
        check(good(seed=1)), slice_sha256=digest, seed=SEED, head=HEAD
    ).to_json()
    assert refused["status"] == "error" and refused["outcome"] == "refused"
    assert refused["reason"].startswith("receipt refused: seed 1")
    assert set(refused) == {
        "lane", "status", "reason", "outcome", "slice_sha256", "receipt_sha256", "seed",
        "head", "failed", "skipped_by_freeze", "skipped_by_suite", "passed", "signature", "refusals",
    }  # fmt: skip


def _with_canary(receipt: Receipt, canary: tuple[str, ...]) -> Verification:
    return verify_receipt(
        SLICE,
        receipt.render(),
        parsed(freeze_report(freeze_record(C))),
        Expectations(
            seed=SEED,
            head=HEAD,
            require_signature=False,
            public_key=None,
            canary=canary,
        ),
    )


def test_a_receipt_that_names_the_canary_must_name_the_one_the_gate_drew() -> None:
    assert _with_canary(good(canary_nodeids=(A,)), (A,)).outcome == "fail"
    assert _with_canary(good(), (A,)).outcome == "fail"  # not told: the slice binds them
    other = _with_canary(good(canary_nodeids=(B,)), (A,))
    assert other.outcome == "refused"
    assert other.reasons == ("canary_nodeids names 1 node id(s), not the 1 the gate drew",)
    outside = _with_canary(good(canary_nodeids=(D,)), (A,))
    assert outside.reasons == (f"canary_nodeids lists node ids that are not in the slice: {D!r}",)


def test_passes_of_the_canary_alone_are_no_evidence() -> None:
    # A passed, B was skipped by the suite, C by its freeze: with A the canary, nothing of
    # the selection passed.
    receipt = good(failed_nodeids=(), skipped_by_freeze=(C,), skipped_nodeids=(B,))
    v = _with_canary(receipt, (A,))
    assert v.outcome == "no_evidence" and "no node passed outside the canary" in v.reasons[0]
    assert check(receipt).outcome == "pass"  # A selected: its pass is evidence
