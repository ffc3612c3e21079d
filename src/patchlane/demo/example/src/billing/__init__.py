"""Billing for the example shop: refunds against a charge, and invoices.

Amounts are integer cents so that no float rounding can move money.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

PAYMENT_TERMS_DAYS = 14
_DAY_S = 24 * 60 * 60


@dataclass(frozen=True)
class RefundResult:
    """The charge left after a refund request.

    ``net_cents`` is what the customer still pays; ``rejected`` says the refund was refused
    (it asked for more than was charged), in which case nothing was refunded.
    """

    net_cents: int
    rejected: bool


def apply_refund(charge_cents: int, refund_cents: int) -> RefundResult:
    """Apply a refund to a charge.

    A refund larger than the charge is rejected and leaves the charge as it was; otherwise
    the net is the charge less the refund. Raises ``ValueError`` for a negative amount.
    """
    if charge_cents < 0 or refund_cents < 0:
        raise ValueError(f"amounts must be non-negative: {charge_cents}, {refund_cents}")
    if refund_cents > charge_cents:
        return RefundResult(net_cents=charge_cents, rejected=True)
    return RefundResult(net_cents=charge_cents - refund_cents, rejected=False)


@dataclass(frozen=True)
class Invoice:
    """An issued invoice: its total and when it was issued and falls due (epoch seconds)."""

    total_cents: int
    issued_at: float
    due_at: float


def issue_invoice(total_cents: int, *, now: float | None = None) -> Invoice:
    """Issue an invoice for ``total_cents``, due ``PAYMENT_TERMS_DAYS`` after issue.

    ``now`` defaults to the wall clock. Raises ``ValueError`` for a negative total.
    """
    if total_cents < 0:
        raise ValueError(f"invoice total must be non-negative: {total_cents}")
    issued = time.time() if now is None else now
    return Invoice(total_cents=total_cents, issued_at=issued, due_at=issued + PAYMENT_TERMS_DAYS * _DAY_S)


def invoice_total(lines: list[dict[str, int]]) -> int:
    """Return the total of invoice lines (``quantity`` × ``unit_cents`` each), in cents."""
    return sum(line["quantity"] * line["unit_cents"] for line in lines)
