"""Which failures run again alone (``lanes.replay.rerun.to_run_again``); the gate's runs of
them, end to end, are in tests/gate/test_run_flaky.py."""

from __future__ import annotations

import dataclasses
from typing import Any

from patchlane.formats.replay_report import ReplayOutcome, ReplayReport
from patchlane.formats.status import Status
from patchlane.lanes.replay.rerun import to_run_again

A, B = "tests/test_a.py::test_a", "tests/test_b.py::test_b"


def failed(*nodes: str, **extra: Any) -> ReplayReport:
    report = ReplayReport(
        status=Status.FAIL, reason="failed", outcome=ReplayOutcome.FAIL, failed=nodes
    )
    return dataclasses.replace(report, **extra)


def test_the_failures_that_do_not_fail_at_the_base_run_again() -> None:
    assert to_run_again(failed(A, B)) == (A, B)
    assert to_run_again(failed(A, B, fail_at_base_too=(A,))) == (B,)
    assert to_run_again(failed(A, fail_at_base_too=(A,))) == ()


def test_a_report_that_did_not_fail_runs_nothing_again() -> None:
    passed = ReplayReport(status=Status.PASS, reason="ok", outcome=ReplayOutcome.PASS, passed=(A,))
    assert to_run_again(passed) == ()
    error = ReplayReport(status=Status.ERROR, reason="x", outcome=ReplayOutcome.FAILS_AT_BASE)
    assert to_run_again(error) == ()


def test_a_skip_the_patch_added_stands() -> None:
    assert to_run_again(failed(A, B, skipped_but_pass_at_base=(B,))) == ()


def test_a_node_that_timed_out_stands() -> None:
    whys = {A: "call failed: assert 1 == 2", B: "timed out after 60 s"}
    assert to_run_again(failed(A, B, failed_why=whys)) == ()
    assert to_run_again(failed(A, failed_why={A: "call failed: assert 1 == 2"})) == (A,)
