"""The replay stage's reading of a failed run: the reject names the failing assertion."""

from __future__ import annotations

import dataclasses
from typing import Any

from patchlane.formats.replay_report import ReplayReport
from patchlane.formats.status import Status
from patchlane.lanes.replay.reports import with_first_failure

A, B = "tests/test_a.py::test_one", "tests/test_b.py::test_two"


def failed(**extra: Any) -> ReplayReport:
    report = ReplayReport(
        status=Status.FAIL,
        reason=f"2 node id(s) failed: {A}, {B}",
        outcome="fail",
        failed=(A, B),
        failed_why={
            A: "call failed: assert 2 == 3 (tests/test_a.py:5: AssertionError)",
            B: "call failed: ValueError: bad (tests/test_b.py:8: ValueError)",
        },
    )
    return dataclasses.replace(report, **extra)


def test_the_reason_tells_the_first_failure_by_its_assertion() -> None:
    reason = with_first_failure(failed()).reason
    assert reason == (
        f"2 node id(s) failed: {A}, {B}; first: {A}: "
        "call failed: assert 2 == 3 (tests/test_a.py:5: AssertionError)"
    )


def test_a_node_that_fails_at_the_base_as_well_is_not_the_first() -> None:
    reason = with_first_failure(failed(fail_at_base_too=(A,))).reason
    assert reason.endswith(
        f"; first: {B}: call failed: ValueError: bad (tests/test_b.py:8: ValueError)"
    )


def test_without_a_why_or_a_failure_the_reason_stays() -> None:
    assert with_first_failure(failed(failed_why=None)).reason == failed().reason
    passed = ReplayReport(status=Status.PASS, reason="ok", outcome="pass")
    assert with_first_failure(passed) is passed
