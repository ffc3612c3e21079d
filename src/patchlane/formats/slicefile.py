"""The replay slice file (docs/architecture.md §4): one pytest node id per line, strictly.

The format is deliberately rigid so that the same set of node ids always gives the same
bytes and therefore the same sha256: sorted by Python ``str`` order (code points, which is
also UTF-8 byte order), unique, UTF-8, every line ending in ``\\n`` (an empty slice is the
empty file), no header, no blank lines, no ``\\r``. ``parse`` refuses anything else rather
than normalising it: a slice whose bytes differ from its canonical form would hash
differently on the host than here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from patchlane.errors import InputError
from patchlane.inputs.committed import decode_utf8
from patchlane.inputs.paths import path_problem


class SliceError(InputError):
    """A slice file (or a node id meant for one) is malformed; names the file and line."""


def nodeid_problem(nodeid: str) -> str | None:
    """Return why ``nodeid`` cannot be a line of a slice file, or ``None``.

    A node id is ``path::name…``, or a file's own id ``path`` (a test file that does not
    collect: it stands for all its tests), whose path is a safe repository-relative file path
    and which holds no line break or other unprintable character (it must stay one line).
    """
    if not nodeid:
        return "blank line"
    if "\r" in nodeid:
        return "CRLF or CR line end (slice lines end in '\\n' only)"
    if not nodeid.isprintable():
        return f"unprintable character in node id {nodeid!r}"
    path, sep, rest = nodeid.partition("::")
    if sep and not rest:
        return f"{nodeid!r} is not a node id (expected 'path::name', or a file's own 'path')"
    problem = path_problem(path, directory_ok=False)
    if problem:
        return problem
    return None


def render(nodeids: Iterable[str], label: str = "<slice>") -> bytes:
    """Return the canonical bytes of the slice holding ``nodeids`` (sorted, unique).

    Raises ``SliceError`` (naming ``label``) for a node id that cannot be a slice line.
    """
    unique = sorted(set(nodeids))
    for nodeid in unique:
        problem = nodeid_problem(nodeid)
        if problem:
            raise SliceError(label, problem)
    return "".join(f"{n}\n" for n in unique).encode("utf-8")


def parse(data: bytes, label: str) -> tuple[str, ...]:
    """Return the node ids of a slice file's bytes, refusing any non-canonical form.

    Raises ``SliceError`` with ``label`` and the 1-based line for: bytes that are not
    UTF-8, a missing final newline, CRLF, a blank line, a line without ``::``, an unsafe
    path part, and a line that is not strictly greater than the one before (unsorted or
    duplicate).
    """
    text = decode_utf8(data, label, SliceError)
    if not text:
        return ()
    lines = text.split("\n")
    if lines[-1] != "":
        raise SliceError(label, "missing final newline", len(lines))
    out: list[str] = []
    for number, line in enumerate(lines[:-1], start=1):
        problem = nodeid_problem(line)
        if problem:
            raise SliceError(label, problem, number)
        if out and line == out[-1]:
            raise SliceError(label, f"duplicate node id {line!r}", number)
        if out and line < out[-1]:
            raise SliceError(label, f"not sorted: {line!r} comes after {out[-1]!r}", number)
        out.append(line)
    return tuple(out)


def sha256(data: bytes) -> str:
    """Return the hex SHA-256 of a slice file's bytes (what a receipt must name)."""
    return hashlib.sha256(data).hexdigest()


def split_slice(nodeids: Iterable[str], shards: int) -> list[tuple[str, ...]]:
    """Split a slice's node ids into ``shards`` sub-slices, round-robin over the sorted ids.

    Shard ``k`` (0-based) gets the ids at positions ``k, k+N, k+2N, …`` of the sorted,
    unique list: the same slice and N always give the same shards, the shards are
    disjoint, their union is the slice, their sizes differ by at most one, and each stays
    sorted. Raises ``ValueError`` for ``shards < 1``.
    """
    if shards < 1:
        raise ValueError(f"shards must be at least 1, got {shards}")
    ordered = sorted(set(nodeids))
    return [tuple(ordered[k::shards]) for k in range(shards)]
