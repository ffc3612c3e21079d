"""Bounded tests: every test of a replay run has a wall clock of its own, kept by this process.

A test that loops forever would otherwise hold the run for its whole wall clock (30 minutes).
The test process is the patch's (it can catch every signal and exception), so the bound is
kept here, in the parent, from what the child streams (``child.replay_run``): ``{"start":
node}`` before each test's setup, ``{"fin": node}`` after its teardown. ``Clock`` watches
that stream on every turn of the watch loop (``infra.process.run_child``'s ``listen``); once
the tests have begun (the ``collected`` record), when nothing new has started or finished for
longer than the bound, it stops the run (its process group is killed, as at the run's own
deadline) and names the test that was running: that node fails, "timed out after N s".

What the patch's code can do to that stream is bounded too: each node starts and finishes the
clock once at most (a forged record for a node already seen, or for one not collected, moves
nothing), so a run that keeps sending records runs at most one bound per collected test, and
the run's own wall clock still holds; a run that sends no ``start`` at all, or goes on past
its last test's end, is stopped with no node named, and then no pass of it counts
(``fold``). Nothing the child sends switches the clock off: it runs until the process
ends.

The bound in force is a context variable (``bounded``), so that every run started inside it
(the head's slice, the checks at the base, the tests that cannot fail: ``carry`` takes it
into a pool's thread) is bounded alike. Its default is derived from the base's recorded
durations (``default_bound``).

A node that ran past its bound at the head is run once more at the base under the same bound
(``overrun``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from patchlane.infra.ui import one_line
from patchlane.lanes.replay.results import FAILED, NodeResult, TestRun

if TYPE_CHECKING:
    from patchlane.formats.depmap import DependencyMap

# The default bound is FACTOR times the base's slowest test, at least FLOOR_S: the recording
# ran under coverage (slower than the replay), but this machine may be busier now than then,
# and a test that is ten times slower than the slowest one the base ever ran is not noise.
# The floor keeps a suite of fast tests from being judged on a scheduler's hiccup (a first
# test that pays for a session fixture, a loaded CI runner).
FACTOR = 10.0
FLOOR_S = 60.0
# No recorded duration (no dependency map, one recorded before durations were kept, a host's
# ``replay run``): two minutes, twice the floor and longer than one test of a unit suite
# should take; a looping patch then costs about twice that (the head, then the base), so a
# verdict still comes within five minutes. A suite with a longer test says so (exit 2, pass
# --test-timeout) rather than spending half an hour on every hanging patch.
FALLBACK_S = 120.0


@dataclass(frozen=True)
class Bound:
    """The bound of one gate's tests, in seconds, and how it was chosen (one line)."""

    seconds: float
    why: str


_BOUND: ContextVar[Bound | None] = ContextVar("patchlane_test_bound", default=None)


@contextlib.contextmanager
def bounded(bound: Bound | float | None) -> Iterator[None]:
    """Within this block, every replay run child bounds each of its tests to ``bound``
    (``None``: unbounded, the run's own wall clock alone)."""
    if isinstance(bound, int | float):
        bound = Bound(float(bound), "given")
    token = _BOUND.set(bound)
    try:
        yield
    finally:
        _BOUND.reset(token)


def current() -> float | None:
    """The per-test bound in force (``bounded``) in seconds, or ``None``."""
    bound = _BOUND.get()
    return None if bound is None else bound.seconds


def in_force() -> str:
    """The bound in force, said for a progress line (empty when there is none)."""
    bound = _BOUND.get()
    return "" if bound is None else f"each bounded to {bound.seconds:g} s ({bound.why})"


def carry() -> Callable[[], None]:
    """Return a thread pool's ``initializer`` that puts the bound in force now into each of
    its threads (a new thread starts with an empty context)."""
    value = _BOUND.get()

    def enter() -> None:
        _BOUND.set(value)

    return enter


def default_bound(given: float | None, slowest_s: float | None) -> Bound:
    """Return the per-test bound: ``given`` (``--test-timeout``) when set, else ``FACTOR``
    times the base's slowest recorded test (``slowest_s``), at least ``FLOOR_S``, else
    ``FALLBACK_S`` when nothing is recorded."""
    if given is not None:
        return Bound(given, "--test-timeout")
    if slowest_s is None:
        return Bound(FALLBACK_S, "no recorded durations at the base")
    seconds = max(FLOOR_S, FACTOR * slowest_s)
    return Bound(
        seconds,
        f"{FACTOR:g} x the base's slowest test ({slowest_s:.1f} s), at least {FLOOR_S:g} s",
    )


class Clock:
    """The parent's clock of one run child's tests (see the module docstring).

    ``bound_s`` ``None``: it only keeps the durations and the running test. ``stop`` is set
    when the bound runs out (``run_child`` then kills the group); ``overran`` is the node
    that was running then, ``None`` with ``stalled`` when none was.
    """

    def __init__(self, bound_s: float | None, *, now: Callable[[], float] = time.monotonic):
        self.bound_s = bound_s
        self.now = now
        self.stop = threading.Event()
        self.overran: str | None = None
        self.stalled = False
        # Node -> the seconds from its start to its end, as this process saw them.
        self.durations: dict[str, float] = {}
        self._wanted: frozenset[str] | None = None
        self._started: dict[str, float] = {}
        self._running: str | None = None
        self._last = 0.0

    def __call__(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Take the records that arrived (possibly none); stop the run when the bound ran
        out."""
        at = self.now()
        for record in records:
            self._take(record, at)
        if self._wanted is None or self.bound_s is None or self.stop.is_set():
            return
        if at - self._last > self.bound_s:
            self.overran = self._running
            self.stalled = self._running is None
            self.stop.set()

    def running(self) -> tuple[str, float] | None:
        """The test running now and for how many seconds, or ``None``."""
        if self._running is None:
            return None
        return self._running, self.now() - self._started[self._running]

    @property
    def slowest_s(self) -> float | None:
        """The longest duration of a test that finished, or ``None``."""
        return max(self.durations.values(), default=None)

    def _take(self, record: Mapping[str, Any], at: float) -> None:
        collected = record.get("collected")
        if self._wanted is None and isinstance(collected, list):
            # The tests begin: from now on something must start or finish within the bound.
            self._wanted = frozenset(n for n in collected if isinstance(n, str))
            self._last = at
        elif self._wanted is None:
            return
        node = record.get("start")
        if isinstance(node, str) and node in self._wanted and node not in self._started:
            self._started[node] = at
            self._running = node
            self._last = at
        node = record.get("fin")
        if isinstance(node, str) and node in self._started and node not in self.durations:
            self.durations[node] = at - self._started[node]
            if self._running == node:
                self._running = None
            self._last = at
        # Never switched off by what the child says (an ``exit`` record, the end of every
        # test: both can be forged before a loop): an honest run ends its process within
        # moments of its last test, and the clock stops with it.


def listener(
    clock: Clock, progress: Callable[[Sequence[Mapping[str, Any]]], None] | None
) -> Callable[[Sequence[Mapping[str, Any]]], None]:
    """Return ``run_child``'s ``listen``: every batch of records to ``clock``, then to
    ``progress`` (``runprogress.Counter``), if given."""

    def listen(records: Sequence[Mapping[str, Any]]) -> None:
        clock(records)
        if progress is not None:
            progress(records)

    return listen


def unjudged(run: TestRun, nodeids: Sequence[str]) -> TestRun:
    """``run`` (stopped by a node past its bound) with ``nodeids``, which it never ran,
    failed as not judged, as the run's own are."""
    if run.overran is None or run.bound_s is None:
        return run
    why = not_judged_why(one_line(run.overran)[:200], run.bound_s)
    added = [n for n in nodeids if n not in run.results]
    return dataclasses.replace(
        run,
        results={**run.results, **{n: NodeResult(FAILED, why) for n in added}},
        not_judged=(*run.not_judged, *added),
    )


def timed_out_why(bound_s: float) -> str:
    """The failure of a node that ran past ``bound_s``."""
    return f"timed out after {bound_s:g} s (its bound; the run was stopped there)"


def not_judged_why(node: str, bound_s: float) -> str:
    """Why a node of a run stopped at ``node`` counts for nothing."""
    return f"not judged: the run was stopped when {node} ran past its bound of {bound_s:g} s"


def stalled_problem(bound_s: float) -> str:
    """The run problem of a run stopped with no test named."""
    return (
        f"no test started or finished for {bound_s:g} s (the per-test bound); the run was stopped"
    )


def for_replay(given: float | None, dep_map: DependencyMap | None) -> Bound:
    """The bound of a gate's replay: ``given``, else derived from ``dep_map``'s recorded
    durations (``default_bound``)."""
    return default_bound(given, dep_map.slowest_s if dep_map is not None else None)
