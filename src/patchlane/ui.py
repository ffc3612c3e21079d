"""Terminal output: quiet/verbose levels, progress on stderr and safe display of paths."""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Output:
    """How a command talks: ``json`` for machine output on stdout, ``quiet``, ``verbose``."""

    json: bool = False
    quiet: bool = False
    verbose: bool = False

    def say(self, text: str) -> None:
        """Print a human line on stdout (suppressed by ``--json`` and ``-q``)."""
        if not (self.json or self.quiet):
            print(text, flush=True)

    def progress(self, text: str) -> None:
        """Print a progress line on stderr (suppressed by ``-q``)."""
        if not self.quiet:
            print(f"patchlane: {text}", file=sys.stderr, flush=True)

    def debug(self, text: str) -> None:
        """Print a line on stderr only with ``-v``."""
        if self.verbose:
            print(f"patchlane: {text}", file=sys.stderr, flush=True)


def show(path: str) -> str:
    """Return ``path`` fit for one terminal line.

    A path with a newline, a control character or a byte that is not UTF-8 could forge a
    line of our own output ("fixture: pass"); such paths are shown quoted with escapes.
    """
    if path.isprintable() and not any(0xDC80 <= ord(c) <= 0xDCFF for c in path):
        return path
    return ascii(path)
