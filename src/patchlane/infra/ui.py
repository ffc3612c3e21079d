"""Terminal output: quiet/verbose levels, progress on stderr, colour and safe display of paths."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TextIO

# SGR codes of the words that carry a decision: the verdicts (bold) and the lane statuses.
# Any other word (not_applicable, skipped, ...) stays plain.
_COLOURS = {
    "reject": "1;31",
    "undecided": "1;33",
    "accept_for_review": "1;32",
    "fail": "31",
    "error": "31",
    "pass": "32",
}
COLOR_CHOICES = ("auto", "always", "never")


@dataclass(frozen=True)
class Output:
    """How a command talks: ``json`` for machine output on stdout, ``quiet``, ``verbose``."""

    json: bool = False
    quiet: bool = False
    verbose: bool = False
    color: bool = False

    def paint(self, word: str) -> str:
        """Return ``word`` (a verdict or a lane status) in its colour when colour is on:
        reject, fail and error red, undecided yellow, accept_for_review and pass green."""
        code = _COLOURS.get(str(word))
        if not self.color or code is None:
            return str(word)
        return f"\x1b[{code}m{word}\x1b[0m"

    def say(self, text: str) -> None:
        """Print a human line on stdout (suppressed by ``--json`` and ``-q``).

        A byte of a path that is not UTF-8 (a lone surrogate) is printed as its escape
        rather than failing on a strict UTF-8 stdout; paths should go through ``show``.
        """
        if not (self.json or self.quiet):
            print(_printable(text), flush=True)

    def progress(self, text: str) -> None:
        """Print a progress line on stderr: on a terminal, or everywhere with ``-v``.

        Suppressed by ``-q``. Off a terminal (CI logs, scripts reading stderr) progress is
        noise around the one line an error is promised to be, so it is shown only on asking.
        """
        if not self.quiet and (self.verbose or sys.stderr.isatty()):
            print(f"patchlane: {one_line(text)}", file=sys.stderr, flush=True)

    def debug(self, text: str) -> None:
        """Print a line on stderr only with ``-v``."""
        if self.verbose:
            print(f"patchlane: {text}", file=sys.stderr, flush=True)


def color_wanted(mode: str | None, stream: TextIO | None) -> bool:
    """Return whether human output on ``stream`` is coloured under ``--color MODE``.

    ``always`` and ``never`` decide. ``auto`` (or ``None``): never when ``NO_COLOR`` is set
    to anything non-empty; always when ``FORCE_COLOR`` is (other than ``0``, ``false``,
    ``no``: a CI log that renders colour asks for it so); never with ``TERM=dumb``;
    otherwise only when ``stream`` is a terminal.
    """
    if mode in ("always", "never"):
        return mode == "always"
    if os.environ.get("NO_COLOR"):
        return False
    force = os.environ.get("FORCE_COLOR", "")
    if force and force.lower() not in ("0", "false", "no"):
        return True
    if os.environ.get("TERM") == "dumb" or stream is None:
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


def show(path: str) -> str:
    """Return ``path`` fit for one terminal line.

    A path with a newline, a control character or a byte that is not UTF-8 could forge a
    line of our own output ("fixture: pass"); such paths are shown quoted with escapes.
    """
    if path.isprintable() and not any(0xDC80 <= ord(c) <= 0xDCFF for c in path):
        return path
    return ascii(path)


def _printable(text: str) -> str:
    # Lone surrogates (os.fsdecode's stand-ins for non-UTF-8 bytes) become ``\udcXX``.
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def one_line(text: str) -> str:
    """Return ``text`` as exactly one printable line: line breaks, control characters and
    non-UTF-8 bytes are escaped (``\\n``, ``\\x1b``, ``\\udce9``); everything else is kept."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def write_stdout(text: str) -> None:
    """Write machine output (``--json``) to stdout as UTF-8 bytes.

    A lone surrogate is written as the six characters ``\\udcXX`` (as ``jsonio`` writes
    files), so that stdout carries the same bytes as the file a command writes, whatever
    the locale's error handler would have done.
    """
    if sys.stdout is None:  # started with stdout closed: nowhere to write, like print()
        return
    data = text.encode("utf-8", "backslashreplace")
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (e.g. redirect_stdout to StringIO)
        sys.stdout.write(data.decode("utf-8"))
    else:
        buffer.write(data)
        buffer.flush()
