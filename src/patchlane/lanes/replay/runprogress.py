"""Progress of a replay run: tests done of the slice and failures so far, every few seconds.

The run child streams one record per report as tests finish (``child.replay_run``, ``child.channel``);
``infra.process.run_child`` hands each batch that arrived to a listener on every
turn of its watch loop. The listener here counts them (a test is done at its end-of-protocol
record; failed at its first report that neither passed nor skipped) and, while a caller has
asked for it (``shown``), says ``replay: run: 120 of 611 tests done, 2 failed so far;
tests/test_x.py::test_y running for 40 s`` every ``EVERY_S`` seconds (the running test and
its time from the parent's clock of it, ``testbound.Clock``), and ``replay: run: collecting
the tests (20 s)`` before the tests begin. The counts are for the eye only: what the child
sends is the patch's code talking, and the outcome is still the parent's fold of the whole
stream (``fold``).

``shown`` sets the printer for the runs started inside it (a context variable), so that the
functions between the command and the child need no argument for it.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from patchlane.infra.ui import one_line

if TYPE_CHECKING:
    from patchlane.infra.ui import Output

# Nine, not ten: the docs promise a line at least every 10 s, and the loop that prints it
# wakes a little late under load (10.1 s measured on rich with other work running).
EVERY_S = 9.0
_PASSED_OR_SKIPPED = ("passed", "skipped")

Say = Callable[[str], None]
_SHOWN: ContextVar[tuple[Say, float] | None] = ContextVar("patchlane_run_progress", default=None)


@contextlib.contextmanager
def shown(say: Say, every_s: float = EVERY_S) -> Iterator[None]:
    """Within this block, every replay run child reports its progress through ``say``
    (``Output.progress``: quiet with ``-q``) every ``every_s`` seconds."""
    token = _SHOWN.set((say, every_s))
    try:
        yield
    finally:
        _SHOWN.reset(token)


def logged(out: Output) -> Say:
    """Return a printer of progress lines on stderr, on a terminal or not, silent with
    ``-q``: as the gate's clock says its steps (``infra.steps``), since a CI log, where a
    hanging test is hardest to see, needs the running test named most."""

    def say(text: str) -> None:
        if not out.quiet:
            print(f"patchlane: {one_line(text)}", file=sys.stderr, flush=True)

    return say


class Counter:
    """Counts one run child's records and says how far it is, at most every ``every_s``.

    ``total`` is the number of tests the run has to do; ``None`` until it is known (the one
    child that collects and asks: ``expect`` once answered), and until then the line says
    how long the child has been collecting. With ``from_collection`` (a run of whole files)
    it is the number of tests the child says it collected. ``running`` (``Clock.running``)
    names the test that runs now and for how long.
    """

    def __init__(
        self,
        say: Say,
        every_s: float,
        total: int | None,
        *,
        from_collection: bool = False,
        clock: Callable[[], float] = time.monotonic,
        running: Callable[[], tuple[str, float] | None] | None = None,
    ) -> None:
        self.say = say
        self.running = running
        self.began = clock()
        self.every_s = every_s
        self.total = total
        self.from_collection = from_collection
        self.clock = clock
        self.since = clock()
        self.done: set[str] = set()
        self.failed: set[str] = set()

    def expect(self, total: int) -> None:
        """The run has ``total`` tests to do; the clock starts now."""
        self.total = total
        self.since = self.clock()

    def __call__(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Take the records that arrived (possibly none) and say the counts when the
        interval has passed."""
        for record in records:
            self._take(record)
        now = self.clock()
        if now - self.since >= self.every_s:
            self.since = now
            self.say(self.line())

    def line(self) -> str:
        """Return the progress line."""
        if self.total is None:
            return f"replay: run: collecting the tests ({self.clock() - self.began:.0f} s)"
        line = (
            f"replay: run: {len(self.done)} of {self.total} tests done, "
            f"{len(self.failed)} failed so far"
        )
        now = self.running() if self.running is not None else None
        if now is not None:
            # A node id is the repository's text: one line, bounded.
            line += f"; {one_line(now[0])[:200]} running for {now[1]:.0f} s"
        return line

    def _take(self, record: Mapping[str, Any]) -> None:
        node = record.get("n")
        if isinstance(node, str) and record.get("o") not in _PASSED_OR_SKIPPED:
            self.failed.add(node)
        finished = record.get("fin")
        if isinstance(finished, str):
            self.done.add(finished)
        collected = record.get("collected")
        if self.from_collection and isinstance(collected, list):
            self.total = len(collected)


def counter(
    total: int | None,
    *,
    from_collection: bool = False,
    running: Callable[[], tuple[str, float] | None] | None = None,
) -> Counter | None:
    """Return a ``Counter`` (see there) for a run child about to start inside ``shown``,
    else ``None``."""
    current = _SHOWN.get()
    if current is None:
        return None
    return Counter(current[0], current[1], total, from_collection=from_collection, running=running)
