"""The gate's clock: steps said on stderr once the gate runs a while, ``-q`` silences them,
and their times go into ``verdict.json``."""

from __future__ import annotations

import time

import pytest

from patchlane.infra.steps import Steps
from patchlane.infra.ui import Output


def test_a_quick_gate_says_nothing_and_a_slow_one_says_each_step_with_its_time(
    capsys: pytest.CaptureFixture[str],
) -> None:
    steps = Steps(Output(), quiet_for_s=0.2)
    with steps.step("classify"):
        pass
    assert capsys.readouterr().err == ""  # within the quiet window
    time.sleep(0.25)
    with steps.step("replay: run"):
        time.sleep(0.05)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "patchlane: replay: run ..."
    assert lines[1].startswith("patchlane: replay: run: 0.")
    assert lines[1].endswith(" s")


def test_quiet_silences_the_steps_but_not_their_times(capsys: pytest.CaptureFixture[str]) -> None:
    steps = Steps(Output(quiet=True), quiet_for_s=0.0)
    with steps.step("property lane"):
        time.sleep(0.01)
    with steps.step("property lane"):
        pass
    assert capsys.readouterr().err == ""
    timings = steps.timings()
    assert set(timings) == {"property lane", "total"}
    assert 0.01 <= timings["property lane"] <= timings["total"]
