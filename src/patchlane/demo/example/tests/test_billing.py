"""Tests of billing: refunds, invoice totals from the locked fixtures, invoice dates."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from billing import PAYMENT_TERMS_DAYS, apply_refund, invoice_total, issue_invoice

FIXTURES = Path(__file__).parent / "fixtures" / "billing"


def _fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def test_partial_refund_reduces_the_charge() -> None:
    result = apply_refund(charge_cents=1000, refund_cents=250)
    assert result.net_cents == 750
    assert result.rejected is False


def test_full_refund_leaves_nothing_to_pay() -> None:
    result = apply_refund(charge_cents=1000, refund_cents=1000)
    assert result.net_cents == 0
    assert result.rejected is False


def test_refund_above_the_charge_is_rejected_and_changes_nothing() -> None:
    result = apply_refund(charge_cents=1000, refund_cents=1001)
    assert result.net_cents == 1000
    assert result.rejected is True


def test_negative_amounts_are_refused() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        apply_refund(charge_cents=-1, refund_cents=0)


def test_invoice_min_total_matches_its_lines() -> None:
    invoice = _fixture("invoice_min.json")
    assert invoice_total(invoice["lines"]) == invoice["total_cents"]


def test_invoice_refund_cases() -> None:
    invoice = _fixture("invoice_refund.json")
    assert invoice_total(invoice["lines"]) == invoice["total_cents"]
    for case in invoice["refunds"]:
        result = apply_refund(invoice["total_cents"], case["refund_cents"])
        assert result.net_cents == case["expect_net_cents"]
        assert result.rejected is case["expect_rejected"]


def test_invoice_is_due_after_the_payment_terms() -> None:
    invoice = issue_invoice(1200, now=1_790_000_000.0)
    assert invoice.due_at - invoice.issued_at == PAYMENT_TERMS_DAYS * 24 * 60 * 60


def test_invoice_timestamp_order() -> None:
    # Reads the wall clock on both sides of issue: this is the assertion the freeze
    # registry names (tests/flaky-freeze.yml), because a sandbox clock can step backwards.
    before = time.time()
    invoice = issue_invoice(1200)
    after = time.time()
    assert before <= invoice.issued_at <= after < invoice.due_at
