"""Request quotas: how much of a plan's monthly allowance is left."""

from __future__ import annotations


def remaining(limit: int, used: int) -> int:
    """Return the requests left this month: never negative, never more than ``limit``.

    Raises ``ValueError`` for a negative limit.
    """
    if limit < 0:
        raise ValueError(f"limit must be non-negative: {limit}")
    return max(0, min(limit, limit - used))
