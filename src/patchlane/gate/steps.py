"""The gate's clock: how long each step took, said on stderr once the gate runs a while.

A gate that answers within a second says nothing on the way (a pre-commit hook, a small
project); past a second each step gets a line when it starts and one with its time when it
ends, on a terminal or not (a CI log needs them most), unless ``-q``. The times go into
``verdict.json`` as ``timings`` (docs/architecture.md §4).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from patchlane.ui import Output, one_line

QUIET_FOR_S = 1.0
# The one entry of ``timings`` that counts rather than times: property runs whose result
# came from the result cache (no child started).
CACHED_RUNS = "property lane: runs from the cache"


class Steps:
    """Times named steps of one gate run (a step may run more than once: times add up)."""

    def __init__(self, out: Output, quiet_for_s: float = QUIET_FOR_S) -> None:
        self.out = out
        self.quiet_for_s = quiet_for_s
        self.started = time.perf_counter()
        self.seconds: dict[str, float] = {}

    def _say(self, text: str) -> None:
        if self.out.quiet or time.perf_counter() - self.started < self.quiet_for_s:
            return
        print(f"patchlane: {one_line(text)}", file=sys.stderr, flush=True)

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Time the block as step ``name``, saying when it starts and what it took."""
        self._say(f"{name} ...")
        start = time.perf_counter()
        try:
            yield
        finally:
            took = time.perf_counter() - start
            self.seconds[name] = self.seconds.get(name, 0.0) + took
            self._say(f"{name}: {took:.2f} s")

    def count(self, name: str, value: int, of: int) -> None:
        """Record ``value`` (a count, not seconds) under ``name``, saying ``name: value of
        OF`` as a step's end would. Returns nothing."""
        self.seconds[name] = value
        self._say(f"{name}: {value} of {of}")

    def timings(self) -> dict[str, float]:
        """Return the seconds of each step so far and ``total`` since the clock started,
        rounded to milliseconds."""
        total = time.perf_counter() - self.started
        return {**{k: round(v, 3) for k, v in self.seconds.items()}, "total": round(total, 3)}
