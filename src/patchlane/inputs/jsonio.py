"""Strict JSON reading (with line numbers for errors) and atomic writing.

Reading runs the C decoder first. Only when the document is bad do we parse it a second
time with a position-recording decoder, so that the error can name a line: the fast path
stays fast for large locks and the slow path exists only to write a good message.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import math
import os
import re
import secrets
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

from patchlane.errors import LINK_REFUSED, InputError, UnsafeWriteError

JsonPath = tuple[str | int, ...]
# A JSON value as an encoder takes it, for a writer that needs more than ``object`` (the
# receipt's canonical encoding, ``rfc8785``, accepts only these).
JsonValue: TypeAlias = (
    "bool | int | float | str | Sequence[JsonValue] | Mapping[str, JsonValue] | None"
)


class DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(literal: str) -> float:
    # ``float("1e400")`` is inf: the value NaN/Infinity are refused for, by another door.
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(f"number {literal} is out of range (not valid JSON here)")
    return value


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


def loads_strict(text: str) -> Any:
    """Parse JSON, refusing duplicate keys, NaN/Infinity and numbers beyond a float's range.

    Returns the parsed value. Raises ``ValueError`` (``json.JSONDecodeError`` for syntax,
    ``DuplicateKeyError`` for a repeated key) or ``RecursionError`` for absurd nesting.
    """
    return json.loads(
        text,
        object_pairs_hook=_no_duplicates,
        parse_constant=_reject_constant,
        parse_float=_finite_float,
    )


@dataclass
class _Scan:
    """What the located pass learned: the line of every value by JSON path, the first
    duplicate key (key, line) in text order, and the line of the first non-finite number."""

    lines: dict[JsonPath, int] = field(default_factory=dict)
    duplicate: tuple[str, int] | None = None
    non_finite_line: int | None = None


def _scan(text: str) -> _Scan:
    """Locate every value of ``text`` (best effort: stops at the first syntax error).

    Uses the pure-Python scanner, whose hooks see positions; only called on bad input or by
    ``line_for``. Line numbers come from a bisect over the newline offsets, so the pass is
    linear in the size of the text.
    """
    newlines = [m.start() for m in re.finditer("\n", text)]
    scan = _Scan()
    decoder = json.JSONDecoder()

    def line_of(pos: int) -> int:
        return bisect.bisect_left(newlines, pos) + 1

    def skip_ws(pos: int) -> int:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        return pos

    def value(pos: int, path: JsonPath) -> int:
        pos = skip_ws(pos)
        scan.lines[path] = line_of(pos)
        if pos < len(text) and text[pos] == "{":
            pos = skip_ws(pos + 1)
            seen: set[str] = set()
            if text[pos] == "}":
                return pos + 1
            while True:
                key_pos = skip_ws(pos)
                key, pos = json.decoder.scanstring(text, key_pos + 1)  # type: ignore[attr-defined]
                if key in seen and scan.duplicate is None:
                    scan.duplicate = (key, line_of(key_pos))
                seen.add(key)
                pos = skip_ws(pos)
                pos = value(pos + 1, (*path, key))  # skip ':'
                pos = skip_ws(pos)
                if text[pos] == "}":
                    return pos + 1
                pos += 1  # ','
        if pos < len(text) and text[pos] == "[":
            pos = skip_ws(pos + 1)
            i = 0
            if text[pos] == "]":
                return pos + 1
            while True:
                pos = skip_ws(value(pos, (*path, i)))
                i += 1
                if text[pos] == "]":
                    return pos + 1
                pos += 1
        parsed, end = decoder.raw_decode(text, pos)
        if isinstance(parsed, float) and not math.isfinite(parsed) and scan.non_finite_line is None:
            scan.non_finite_line = line_of(pos)
        return int(end)

    # Best effort: the strict pass already knows the text is bad (or deep).
    with contextlib.suppress(ValueError, IndexError, RecursionError):
        value(0, ())
    return scan


def line_for(text: str, path: JsonPath) -> int | None:
    """Return the line where the value at ``path`` starts, or of its nearest parent."""
    lines = _scan(text).lines
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return lines.get(())


def dotted(path: JsonPath) -> str:
    """Name a JSON path as a reader would write it: ``roots[0].ok`` (keys joined by ``.``,
    indexes in brackets; empty for the document itself)."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def read_file_bytes(
    path: Path,
    label: str,
    error: Callable[[str, str, int | None], InputError] = InputError,
) -> bytes:
    """Return the bytes of the file ``path``. Raises ``error(label, message, None)`` when it
    does not exist or cannot be read."""
    try:
        return path.read_bytes()
    except FileNotFoundError as e:
        raise error(label, "no such file", None) from e
    except OSError as e:
        raise error(label, f"cannot read: {e.strerror or e}", None) from e


def parse_json_bytes(
    data: bytes,
    label: str,
    error: Callable[[str, str, int | None], InputError] = InputError,
) -> tuple[Any, str]:
    """Decode ``data`` as UTF-8 and strictly parse it as JSON.

    Returns ``(value, text)``. Raises ``error(label, message, line)`` for bytes that are not
    UTF-8 or text that is not strict JSON.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(label, f"not UTF-8 (byte {e.start})", None) from e
    return parse_json_text(text, label, error), text


def load_json_file(
    path: Path,
    label: str,
    error: Callable[[str, str, int | None], InputError] = InputError,
    text: str | None = None,
) -> tuple[Any, str]:
    """Read and strictly parse a JSON file (or its already-read ``text``).

    Returns ``(value, text)``. Raises ``error(label, message, line)`` when the file cannot
    be read, is not UTF-8, or is not strict JSON.
    """
    if text is None:
        return parse_json_bytes(read_file_bytes(path, label, error), label, error)
    return parse_json_text(text, label, error), text


def parse_json_text(
    text: str,
    label: str,
    error: Callable[[str, str, int | None], InputError] = InputError,
) -> Any:
    """Strictly parse JSON ``text`` and return the value.

    Raises ``error`` naming ``label`` (and the line where there is one) for invalid JSON, a
    duplicate key, NaN/Infinity or a number out of a float's range, an integer too long to
    convert, and nesting too deep for the decoder: hostile text never raises anything else.
    """
    try:
        return loads_strict(text)
    except json.JSONDecodeError as e:
        raise error(label, f"invalid JSON: {e.msg} (column {e.colno})", e.lineno) from e
    except DuplicateKeyError as e:
        # Report the first duplicate in text order; the strict decoder may have met an
        # inner one first (it finishes inner objects before outer ones).
        key, line = _scan(text).duplicate or (e.key, None)
        raise error(label, f"duplicate key {key!r}", line) from e
    except (RecursionError, MemoryError) as e:
        # Raised from the decoder's depth and caught here, after it has unwound.
        raise error(label, "invalid JSON: nested too deeply", None) from e
    except ValueError as e:
        raise error(label, str(e), _scan(text).non_finite_line) from e


def dumps_report(value: object) -> str:
    """Serialise a report deterministically: two-space indent, UTF-8, newline-terminated."""
    return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half.

    A temp file in the same directory is written, fsynced, renamed over ``path``, and the
    directory is fsynced so that the rename survives a crash. The file gets the mode any new
    file of the user gets (0666 less the umask). Returns nothing.

    Raises ``UnsafeWriteError`` (exit 2) when ``path`` itself is a symbolic link: it is
    neither written through nor replaced, because the caller asked for that path and a
    link there (in a hostile repository, ``.patchlane/verdict.json -> ../src/app.py``) is
    not what anyone meant. Links among the parent directories are the caller's business
    (``gate`` refuses those inside the repository). Raises ``InputError`` (exit 2, "cannot
    write") when the file system refuses; no temp file is left behind.
    """
    try:
        _atomic_write(path, data)
    except OSError as e:
        blocker = _not_a_directory(path.parent)
        why = f"{blocker} is not a directory" if blocker is not None else e.strerror or str(e)
        raise InputError(os.fspath(path), f"cannot write: {why}") from e


def _not_a_directory(parent: Path) -> Path | None:
    """Return the nearest existing ancestor of ``parent`` if it is not a directory."""
    for candidate in (parent, *parent.parents):
        if candidate.is_symlink() or candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Everything below is relative to one descriptor of the directory, so that the link
    # check, the temp file and the rename all see the same directory even if a component
    # of its path is swapped meanwhile. What remains is a race (TOCTOU) between the check
    # and the rename. Its worst outcome is that a link created in that instant is
    # *replaced* by our file: rename never follows a link, and the temp file is created
    # O_EXCL|O_NOFOLLOW, so nothing is ever written through one. (Code that can create
    # links at that moment runs as the same user and could write anywhere anyway.)
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        _write_in(dir_fd, path, data)
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _write_in(dir_fd: int, path: Path, data: bytes) -> None:
    """Write ``data`` to ``path.name`` in the directory ``dir_fd`` through a temp file."""
    name = path.name
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        pass
    else:
        if stat.S_ISLNK(st.st_mode):
            raise UnsafeWriteError(os.fspath(path), LINK_REFUSED)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            # Not tempfile.mkstemp: it creates the file 0600, and the rename would then
            # leave a report or a lock readable by its writer only.
            fd = os.open(tmp, flags, 0o666, dir_fd=dir_fd)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def encode_text(text: str) -> bytes:
    """Encode ``text`` as UTF-8; a lone surrogate (a path byte that is not UTF-8, decoded by
    ``os.fsdecode``) becomes the six characters ``\\udcXX``, which inside a JSON string is
    exactly the escape that reads back to the same byte."""
    return text.encode("utf-8", "backslashreplace")


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` atomically as UTF-8 (see ``atomic_write_bytes`` and ``encode_text``)."""
    atomic_write_bytes(path, encode_text(text))


def write_json(path: Path, value: object) -> None:
    """Write ``value`` as a deterministic JSON report, atomically."""
    atomic_write_text(path, dumps_report(value))
