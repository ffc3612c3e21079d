"""Strict JSON reading (with line numbers for errors) and atomic writing.

Reading runs the C decoder first. Only when the document is bad do we parse it a second
time with a position-recording decoder, so that the error can name a line: the fast path
stays fast for large locks and the slow path exists only to write a good message.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from patchlane.errors import InputError

JsonPath = tuple[str | int, ...]


class DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


def loads_strict(text: str) -> Any:
    """Parse JSON, refusing duplicate keys and NaN/Infinity.

    Returns the parsed value. Raises ``ValueError`` (``json.JSONDecodeError`` for syntax,
    ``DuplicateKeyError`` for a repeated key).
    """
    return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _object_lines(text: str) -> tuple[dict[JsonPath, int], int | None]:
    """Return the line of every value by JSON path, and the line of a duplicate key if any.

    Uses the pure-Python scanner, whose hooks see positions; only called on bad input.
    """
    lines: dict[JsonPath, int] = {}
    dup_line: int | None = None
    decoder = json.JSONDecoder()
    idx = 0

    def skip_ws(pos: int) -> int:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        return pos

    def value(pos: int, path: JsonPath) -> int:
        nonlocal dup_line
        pos = skip_ws(pos)
        lines[path] = _line_of(text, pos)
        if pos < len(text) and text[pos] == "{":
            pos = skip_ws(pos + 1)
            seen: set[str] = set()
            if text[pos] == "}":
                return pos + 1
            while True:
                key, pos = json.decoder.scanstring(text, skip_ws(pos) + 1)  # type: ignore[attr-defined]
                if key in seen and dup_line is None:
                    dup_line = _line_of(text, pos)
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
        _, end = decoder.raw_decode(text, pos)
        return int(end)

    try:
        value(idx, ())
    except (ValueError, IndexError):
        pass  # the located pass is best effort; the strict pass already knows it is bad
    return lines, dup_line


def line_for(text: str, path: JsonPath) -> int | None:
    """Return the line where the value at ``path`` starts, or of its nearest parent."""
    lines, _ = _object_lines(text)
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return lines.get(())


def load_json_file(
    path: Path,
    label: str,
    error: Callable[[str, str, int | None], InputError] = InputError,
    text: str | None = None,
) -> tuple[Any, str]:
    """Read and strictly parse a JSON file.

    Returns ``(value, text)``. Raises ``error(label, message, line)`` when the file cannot
    be read, is not UTF-8, or is not strict JSON.
    """
    if text is None:
        try:
            text = path.read_bytes().decode("utf-8")
        except FileNotFoundError as e:
            raise error(label, "no such file", None) from e
        except UnicodeDecodeError as e:
            raise error(label, f"not UTF-8 (byte {e.start})", None) from e
        except OSError as e:
            raise error(label, f"cannot read: {e.strerror}", None) from e
    return parse_json_text(text, label, error), text


def parse_json_text(
    text: str,
    label: str,
    error: Callable[[str, str, int | None], InputError] = InputError,
) -> Any:
    """Strictly parse JSON ``text``; raise ``error`` naming ``label`` and the line on failure."""
    try:
        return loads_strict(text)
    except json.JSONDecodeError as e:
        raise error(label, f"invalid JSON: {e.msg} (column {e.colno})", e.lineno) from e
    except DuplicateKeyError as e:
        _, dup_line = _object_lines(text)
        raise error(label, str(e), dup_line) from e
    except ValueError as e:
        raise error(label, str(e), None) from e


def dumps_report(value: Any) -> str:
    """Serialise a report deterministically: two-space indent, UTF-8, newline-terminated."""
    return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half.

    A temp file in the same directory is written, fsynced, renamed over ``path``, and the
    directory is fsynced so that the rename survives a crash.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def encode_text(text: str) -> bytes:
    """Encode ``text`` as UTF-8; a lone surrogate (a path byte that is not UTF-8, decoded by
    ``os.fsdecode``) becomes the six characters ``\\udcXX``, which inside a JSON string is
    exactly the escape that reads back to the same byte."""
    return text.encode("utf-8", "backslashreplace")


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` atomically as UTF-8 (see ``atomic_write_bytes`` and ``encode_text``)."""
    atomic_write_bytes(path, encode_text(text))


def write_json(path: Path, value: Any) -> None:
    """Write ``value`` as a deterministic JSON report, atomically."""
    atomic_write_text(path, dumps_report(value))
