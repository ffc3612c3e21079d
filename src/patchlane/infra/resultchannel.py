"""The parent's side of a child's result channel: the records split and checked against
the job's token (``parse_results``), the child's one question answered mid-run
(``Question``: the parent's side of ``process.Child.question`` and ``answer``), and
the records handed to a caller as they arrive (``Listener``).
``process.run_child`` watches the channel; this module reads what it carries.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Sequence

from patchlane.inputs.jsonio import loads_strict

# A record with this key asks the parent a question mid-run (``process.Child.question``).
ASK = "ask"
# Given the records that arrived since its last call (often none), on every turn of the
# watch loop: what a caller shows while the child runs (``run_child``'s ``listen``).
Listen = Callable[[Sequence[dict[str, object]]], None]


class Listener:
    """Hands the records that arrived to ``run_child``'s ``listen``, on every turn."""

    def __init__(self, token: str, listen: Listen) -> None:
        self.token = token
        self.listen = listen
        self.seen = 0  # bytes of the channel already split into records

    def look(self, results: bytearray) -> None:
        """Hand on the complete lines that arrived since the last look (maybe none)."""
        end = results.rfind(b"\n", self.seen)
        records: list[dict[str, object]] = []
        if end >= self.seen:
            records, _, _ = parse_results(bytes(results[self.seen : end + 1]), self.token)
            self.seen = end + 1
        self.listen(records)


class Question:
    """Watches the result channel for the child's one question (``asked``: the records up
    to it, the question last) and carries the one answer back (``reply``).

    The answer is written from a thread: a child that asks and then never reads (the
    patch's code runs in it) must not stop the watch, whose clock kills it in the end; the
    write then fails and the thread ends.
    """

    def __init__(self, token: str, fd: int) -> None:
        self.token = token
        self.fd: int | None = fd
        self.seen = 0  # bytes of the channel already split into records
        self.records: list[dict[str, object]] = []
        self.asked: tuple[dict[str, object], ...] | None = None

    def look(self, results: bytearray) -> None:
        """Take the complete lines that arrived, until the first question."""
        if self.asked is not None or self.fd is None:
            return
        end = results.rfind(b"\n")
        if end < self.seen:
            return
        chunk = bytes(results[self.seen : end + 1])
        self.seen = end + 1
        records, _, _ = parse_results(chunk, self.token)
        for record in records:
            self.records.append(record)
            if ASK in record:
                self.asked = tuple(self.records)
                return

    def reply(self, data: bytes) -> None:
        """Write ``data`` as the answer and close the descriptor (from a thread); a second
        reply, or one after ``close``, writes nothing."""
        fd, self.fd = self.fd, None
        if fd is not None:
            threading.Thread(target=_write_and_close, args=(fd, data), daemon=True).start()

    def close(self) -> None:
        """Close the answer's descriptor if it was never replied on: a child waiting for
        the answer reads its end."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def _write_and_close(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        pass  # the child is gone, or closed its end: the watch reports what it did
    finally:
        os.close(fd)


def parse_results(data: bytes, token: str) -> tuple[list[dict[str, object]], int | None, list[str]]:
    """Split the result channel into records.

    Returns ``(records, done_count, problems)``: the JSON objects carrying ``token`` (the
    token removed), in order and before ``done``; the ``count`` of the ``done`` line (or
    ``None``); and what was wrong with the channel (a line that is not a JSON object, a
    wrong or missing token, anything after ``done``, an unterminated last line). Problems
    never quote the child's bytes.
    """

    records: list[dict[str, object]] = []
    problems: list[str] = []
    done: int | None = None
    lines = data.split(b"\n")
    if lines[-1]:
        problems.append("an unterminated line at the end of the result channel")
    for number, raw in enumerate(lines[:-1], start=1):
        try:
            value = loads_strict(raw.decode("utf-8"))
        except (ValueError, RecursionError, UnicodeDecodeError):
            problems.append(f"result line {number} is not JSON")
            continue
        if not isinstance(value, dict) or value.get("token") != token:
            problems.append(f"result line {number} does not carry the job's token")
            continue
        value.pop("token")
        if done is not None:
            problems.append(f"result line {number} comes after 'done'")
        elif value.get("done") is True:
            count = value.get("count")
            if (
                isinstance(count, bool)
                or not isinstance(count, int)
                or set(value)
                != {
                    "done",
                    "count",
                }
            ):
                problems.append(f"result line {number}: a malformed 'done' line")
            else:
                done = count
        else:
            records.append(value)
    return records, done, problems
