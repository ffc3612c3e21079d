"""The gate's clock: how long each step took, said on stderr once the gate runs a while.

A gate that answers within a second says nothing on the way (a pre-commit hook, a small
project); past a second each step gets a line when it starts and one with its time when it
ends, on a terminal or not (a CI log needs them most), unless ``-q``. A step that began
inside that second and is still running when it ends is said then, and a long step says
how long it has run every ``HEARTBEAT_S`` seconds, so that a log never falls silent for
long. Other long commands (``property``, ``replay select``, ``replay map``) keep the same
clock. The times go into ``verdict.json`` as ``timings`` (docs/architecture.md §4).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from patchlane.infra.ui import Output, one_line

QUIET_FOR_S = 1.0
# Nine: the docs promise a line at least every 10 s, and a waking thread runs a little late.
HEARTBEAT_S = 9.0
# The one entry of ``timings`` that counts rather than times: property runs whose result
# came from the result cache (no child started).
CACHED_RUNS = "property lane: runs from the cache"


class Steps:
    """Times named steps of one gate run (a step may run more than once: times add up)."""

    def __init__(
        self, out: Output, quiet_for_s: float = QUIET_FOR_S, heartbeat_s: float = HEARTBEAT_S
    ) -> None:
        self.out = out
        self.quiet_for_s = quiet_for_s
        self.heartbeat_s = heartbeat_s
        self.started = time.perf_counter()
        self.seconds: dict[str, float] = {}

    def _say(self, text: str) -> bool:
        """Print ``text`` unless ``-q`` or within the quiet window; return whether it did."""
        if self.out.quiet or time.perf_counter() - self.started < self.quiet_for_s:
            return False
        print(f"patchlane: {one_line(text)}", file=sys.stderr, flush=True)
        return True

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Time the block as step ``name``, saying when it starts (or when the quiet window
        closes while it runs), how long it has run every ``heartbeat_s``, and what it took."""
        start = time.perf_counter()
        said = self._say(f"{name} ...")
        watch = None if self.out.quiet else _Watch(self, name, start, said)
        try:
            yield
        finally:
            if watch is not None:
                watch.stop()
            took = time.perf_counter() - start
            self.seconds[name] = self.seconds.get(name, 0.0) + took
            self._say(f"{name}: {took:.2f} s")

    def add(self, name: str, seconds: float) -> None:
        """Add ``seconds`` to step ``name`` without saying anything: for a part of a step
        timed elsewhere (the replay's choice, made while its child waits). Returns nothing."""
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

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


class _Watch:
    """Says a running step from a daemon thread: its start line once the quiet window closes
    (when that was not said already), then every ``heartbeat_s`` how long it has run; never
    a line after ``stop``."""

    def __init__(self, steps: Steps, name: str, start: float, said: bool) -> None:
        self.steps = steps
        self.name = name
        self.start = start
        self.said = said
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name="patchlane-step", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        if not self.said:
            opens = self.steps.started + self.steps.quiet_for_s - time.perf_counter()
            if self.done.wait(max(opens, 0.0)):
                return
            self._line(f"{self.name} ...")
        while not self.done.wait(self.steps.heartbeat_s):
            self._line(f"{self.name}: running for {time.perf_counter() - self.start:.0f} s ...")

    def _line(self, text: str) -> None:
        with self.lock:
            if not self.done.is_set():
                print(f"patchlane: {one_line(text)}", file=sys.stderr, flush=True)

    def stop(self) -> None:
        """End the watch; returns once its thread has stopped (no line comes after)."""
        with self.lock:
            self.done.set()
        self.thread.join()
