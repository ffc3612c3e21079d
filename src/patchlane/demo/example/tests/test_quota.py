"""Tests of quota.remaining."""

from __future__ import annotations

import pytest

from quota import remaining


@pytest.mark.parametrize(
    ("limit", "used", "left"),
    [(100, 0, 100), (100, 40, 60), (100, 100, 0), (100, 250, 0), (0, 0, 0)],
)
def test_remaining(limit: int, used: int, left: int) -> None:
    assert remaining(limit, used) == left


def test_negative_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        remaining(-1, 0)
