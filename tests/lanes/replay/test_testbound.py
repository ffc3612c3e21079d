"""Bounded tests: the parent's clock of each test (``testbound.Clock``) over real pytest
children in temp trees (a test that loops forever, one that also ignores every signal and
swallows every exception), and the clock's rules on streams a hostile child could send."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from patchlane.lanes.replay.chosen import Scope
from patchlane.lanes.replay.collect import Collected
from patchlane.lanes.replay.results import FAILED, PASSED, SKIPPED, Runner
from patchlane.lanes.replay.run import run_tests
from patchlane.lanes.replay.runprogress import shown
from patchlane.lanes.replay.testbound import (
    FACTOR,
    FALLBACK_S,
    FLOOR_S,
    Clock,
    bounded,
    carry,
    current,
    default_bound,
)
from tests.lanes.replay.trees import collect_and_run, write_tree

LOOPS = """\
def test_before():
    assert True


def test_loops():
    while True:
        pass


def test_after():
    assert True
"""
# Catches what a polite stop would send (SIGTERM, SIGINT as KeyboardInterrupt, SystemExit)
# and goes on looping: only a kill from outside the process ends it.
HOSTILE = """\
import signal


def test_first():
    assert True


def test_hostile():
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM):
        signal.signal(sig, signal.SIG_IGN)
    while True:
        try:
            while True:
                pass
        except (KeyboardInterrupt, SystemExit, BaseException):
            continue


def test_last():
    assert True
"""
IDS = [f"tests/test_loops.py::test_{x}" for x in ("before", "loops", "after")]


class _Now:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_the_clock_starts_when_the_tests_begin_and_stops_the_run_naming_the_running_test() -> None:
    now = _Now()
    clock = Clock(5.0, now=now)
    now.t += 60
    clock([])  # collecting: no test has begun, no bound yet
    assert not clock.stop.is_set()
    clock([{"collected": ["t::a", "t::b"]}, {"start": "t::a"}])
    now.t += 4
    clock([{"fin": "t::a"}, {"start": "t::b"}])
    assert clock.running() == ("t::b", 0.0)
    now.t += 5
    clock([])
    assert not clock.stop.is_set()  # exactly the bound: not past it
    now.t += 0.5
    clock([])
    assert clock.stop.is_set() and clock.overran == "t::b" and not clock.stalled
    assert clock.durations == {"t::a": 4.0} and clock.slowest_s == 4.0


def test_a_forged_start_or_end_moves_the_clock_once_per_collected_test_at_most() -> None:
    now = _Now()
    clock = Clock(5.0, now=now)
    clock([{"collected": ["t::a", "t::b"]}, {"start": "t::a"}])
    for _ in range(3):
        now.t += 4
        # The patch's code sends what would reset a naive clock: a start again, the start
        # and end of a test that was never collected, a start of a non-string node.
        clock([{"start": "t::a"}, {"start": "t::zzz"}, {"fin": "t::zzz"}, {"start": 1}])
    assert clock.stop.is_set() and clock.overran == "t::a"


def test_a_run_that_names_no_running_test_is_stopped_as_stalled() -> None:
    now = _Now()
    clock = Clock(5.0, now=now)
    clock([{"collected": ["t::a", "t::b"]}, {"start": "t::a"}, {"fin": "t::a"}])
    now.t += 6  # nothing starts after t::a ended (its start was never sent)
    clock([])
    assert clock.stop.is_set() and clock.overran is None and clock.stalled


def test_nothing_the_child_sends_switches_the_clock_off() -> None:
    # A forged end of every test, or a forged exit status, then a loop: still stopped.
    now = _Now()
    clock = Clock(5.0, now=now)
    clock([{"collected": ["t::a", "t::b"]}, {"start": "t::a"}])
    clock([{"fin": "t::a"}, {"start": "t::b"}, {"fin": "t::b"}, {"exit": 0}])
    now.t += 6
    clock([])
    assert clock.stop.is_set() and clock.stalled and clock.running() is None


def test_without_a_bound_the_clock_only_keeps_durations() -> None:
    now = _Now()
    clock = Clock(None, now=now)
    clock([{"collected": ["t::a"]}, {"start": "t::a"}])
    now.t += 1000
    clock([{"fin": "t::a"}])
    assert not clock.stop.is_set() and clock.durations == {"t::a": 1000.0}


def test_the_default_bound_is_derived_from_the_base_s_slowest_test() -> None:
    assert default_bound(7.5, 100.0).seconds == 7.5  # --test-timeout wins
    assert default_bound(None, None).seconds == FALLBACK_S  # nothing recorded
    assert default_bound(None, 0.2).seconds == FLOOR_S  # fast suites: the floor
    slow = default_bound(None, 30.0)
    assert slow.seconds == FACTOR * 30.0 and "slowest" in slow.why


def test_the_bound_in_force_reaches_a_pool_s_threads_through_carry() -> None:
    from concurrent.futures import ThreadPoolExecutor

    assert current() is None
    with bounded(12.0):
        with ThreadPoolExecutor(max_workers=1, initializer=carry()) as pool:
            assert pool.submit(current).result() == 12.0
        with ThreadPoolExecutor(max_workers=1) as pool:
            assert pool.submit(current).result() is None  # a new thread's empty context
    assert current() is None


@pytest.mark.slow
def test_a_test_that_loops_forever_fails_timed_out_and_the_run_stops_there(
    tmp_path: Path,
) -> None:
    tree = write_tree(tmp_path / "tree", {"tests/test_loops.py": LOOPS})
    lines: list[str] = []
    begun = time.monotonic()
    with bounded(3.0), shown(lines.append, every_s=1.0):
        run = run_tests(tree, nodeids=IDS, hash_seed=1, timeout_s=600)
    assert time.monotonic() - begun < 60  # not the run's 600 s
    assert run.overran == IDS[1] and run.bound_s == 3.0
    assert run.results[IDS[1]].outcome == FAILED
    assert run.results[IDS[1]].why.startswith("timed out after 3 s")
    # The others are not judged: failed (never a pass from a run that was stopped), named.
    assert set(run.not_judged) == {IDS[0], IDS[2]}
    assert all(run.results[n].why.startswith("not judged: ") for n in run.not_judged)
    assert any("ran past its bound of 3 s" in p for p in run.problems)
    # While it looped, the progress line named it and how long it had run.
    assert any(f"{IDS[1]} running for " in line for line in lines), lines
    assert IDS[0] in run.durations  # the parent timed the test that ended


@pytest.mark.slow
def test_a_test_that_ignores_signals_and_swallows_exceptions_is_stopped_all_the_same(
    tmp_path: Path,
) -> None:
    tree = write_tree(tmp_path / "tree", {"tests/test_hostile.py": HOSTILE})
    ids = [f"tests/test_hostile.py::test_{x}" for x in ("first", "hostile", "last")]
    begun = time.monotonic()
    with bounded(3.0):
        run = run_tests(tree, nodeids=ids, hash_seed=1, timeout_s=600)
    assert time.monotonic() - begun < 60
    assert run.overran == ids[1]
    assert run.results[ids[1]].outcome == FAILED
    assert set(run.not_judged) == {ids[0], ids[2]}


@pytest.mark.slow
def test_the_child_that_collects_and_asks_is_bounded_too(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "tree", {"tests/test_loops.py": LOOPS})

    def choose(collected: Collected) -> tuple[str, ...]:
        return tuple(collected.nodeids)

    with bounded(3.0):
        ran = collect_and_run(tree, Scope(("tests",), (), None), choose, Runner(2, 600))
    assert ran.run is not None and ran.run.overran == IDS[1]
    assert ran.run.results[IDS[1]].why.startswith("timed out after 3 s")


@pytest.mark.slow
def test_within_the_bound_nothing_changes_and_durations_are_kept(tmp_path: Path) -> None:
    tree = write_tree(
        tmp_path / "tree",
        {
            "tests/test_ok.py": "import time\n\n\ndef test_sleeps():\n    time.sleep(0.3)\n\n\n"
            "def test_skips():\n    import pytest\n    pytest.skip('no')\n"
        },
    )
    ids = ["tests/test_ok.py::test_sleeps", "tests/test_ok.py::test_skips"]
    with bounded(30.0):
        run = run_tests(tree, nodeids=ids, hash_seed=1, timeout_s=600)
    assert run.results[ids[0]].outcome == PASSED and run.results[ids[1]].outcome == SKIPPED
    assert run.overran is None and run.not_judged == () and not run.problems
    assert run.durations[ids[0]] >= 0.3
