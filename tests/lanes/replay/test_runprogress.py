"""Progress of ``replay: run``: real pytest children in temp trees, the interval shortened
through ``shown``'s parameter (never a timing assertion: only the lines' shape and counts)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from patchlane.lanes.replay.chosen import Scope
from patchlane.lanes.replay.collect import Collected
from patchlane.lanes.replay.results import FAILED, PASSED, Runner
from patchlane.lanes.replay.run import run_tests
from patchlane.lanes.replay.runprogress import Counter, counter, shown
from tests.lanes.replay.trees import collect_and_run, write_tree

# Four tests that each take a while, one of which fails: the run lasts longer than the
# interval below many times over, so progress is said while it runs.
SLOW = """\
import time


def test_a():
    time.sleep(0.4)


def test_b():
    time.sleep(0.4)
    assert False


def test_c():
    time.sleep(0.4)


def test_d():
    time.sleep(0.4)
"""
COLLECTING = re.compile(r"replay: run: collecting the tests \(\d+ s\)\Z")
IDS = [f"tests/test_slow.py::test_{x}" for x in "abcd"]
LINE = re.compile(
    r"replay: run: (\d+) of 4 tests done, (\d+) failed so far"
    r"(; tests/test_slow\.py::test_[abcd] running for \d+ s)?\Z"
)


def _counts(lines: list[str]) -> list[tuple[int, int]]:
    # Lines said while the child collected come first, then the counts.
    lines = [line for line in lines if not COLLECTING.match(line)]
    matched = [LINE.match(line) for line in lines]
    assert all(matched), lines
    return [(int(m.group(1)), int(m.group(2))) for m in matched if m]


@pytest.mark.slow
def test_a_run_longer_than_the_interval_says_tests_done_and_failed_so_far(
    tmp_path: Path,
) -> None:
    tree = write_tree(tmp_path / "tree", {"tests/test_slow.py": SLOW})
    lines: list[str] = []
    with shown(lines.append, every_s=0.05):
        run = run_tests(tree, nodeids=IDS, hash_seed=1, timeout_s=120)
    assert run.results[IDS[1]].outcome == FAILED and run.results[IDS[0]].outcome == PASSED
    counts = _counts(lines)
    assert counts, "no progress line during a run of about 1.6 s with a 0.05 s interval"
    assert counts == sorted(counts)  # the counts only grow
    assert all(done <= 4 and failed <= 1 for done, failed in counts)


@pytest.mark.slow
def test_the_child_that_collects_and_runs_counts_the_chosen_tests(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "tree", {"tests/test_slow.py": SLOW})
    lines: list[str] = []

    def choose(collected: Collected) -> tuple[str, ...]:
        assert sorted(collected.nodeids) == IDS
        return tuple(IDS)

    with shown(lines.append, every_s=0.05):
        ran = collect_and_run(tree, Scope(("tests",), (), None), choose, Runner(3, 120))
    assert ran.run is not None and ran.run.results[IDS[2]].outcome == PASSED
    assert _counts(lines)


def test_outside_shown_no_run_counts() -> None:
    assert counter(4) is None
    with shown(print):
        assert counter(4) is not None
    assert counter(4) is None


def test_the_counter_counts_ends_of_tests_and_first_failures() -> None:
    now = [0.0]
    lines: list[str] = []
    counter = Counter(lines.append, 10.0, None, clock=lambda: now[0])
    counter([{"n": "t::a", "o": "passed", "w": "call"}, {"fin": "t::a"}])
    now[0] = 11.0
    counter([])
    # Before the total is known: how long the child has been collecting.
    assert lines == ["replay: run: collecting the tests (11 s)"]
    lines.clear()
    counter.expect(3)
    counter(
        [{"n": "t::b", "o": "failed", "w": "call"}, {"n": "t::b", "o": "failed", "w": "teardown"}]
    )
    counter([{"fin": "t::b"}])
    assert lines == []  # the interval starts when the total is known
    now[0] = 21.0
    counter([])
    assert lines == ["replay: run: 2 of 3 tests done, 1 failed so far"]
    counter([])
    assert len(lines) == 1  # once per interval


def test_a_run_of_whole_files_counts_what_the_child_collected() -> None:
    now = [0.0]
    lines: list[str] = []
    counter = Counter(lines.append, 1.0, 0, from_collection=True, clock=lambda: now[0])
    counter([{"collected": ["f::a", "f::b"]}, {"fin": "f::a"}])
    now[0] = 2.0
    counter([])
    assert lines == ["replay: run: 1 of 2 tests done, 0 failed so far"]


def test_the_line_names_the_running_test_and_how_long_it_has_run() -> None:
    now = [0.0]
    lines: list[str] = []
    running: list[tuple[str, float] | None] = [None]
    counter = Counter(lines.append, 10.0, 2, clock=lambda: now[0], running=lambda: running[0])
    now[0] = 10.0
    counter([])
    assert lines == ["replay: run: 0 of 2 tests done, 0 failed so far"]  # none running yet
    running[0] = ("t::loops\x1b[2J\nforged", 42.4)
    now[0] = 20.0
    counter([])
    # The node id is the repository's text: one line, no escape sequence.
    assert lines[-1].startswith("replay: run: 0 of 2 tests done, 0 failed so far; t::loops")
    assert lines[-1].endswith(" running for 42 s")
    assert "\n" not in lines[-1] and "\x1b" not in lines[-1]
