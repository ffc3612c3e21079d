"""Parsing content a patch wrote, which an attacker may have chosen, without ever crashing.

Every file patchlane reads from the repository under judgement may be hostile: nested a
hundred thousand levels deep, fifty megabytes long, full of NUL bytes or not UTF-8 at all.
Python's own parsers answer such input with more than their documented error:
``ast.parse`` raises ``RecursionError`` ("during ast construction"), ``MemoryError``
("parser stack overflow") or ``ValueError`` (NUL bytes, on some 3.11 releases) as well as
``SyntaxError``; ``tomllib`` raises ``RecursionError`` for deep arrays and ``ValueError``
for an integer longer than ``sys.get_int_max_str_digits()``; and both take time and memory
out of proportion with the bytes (a dense 6 MB Python file makes a 2.4 GB tree). Left
alone, any of these would reach ``main``'s error boundary as an internal error (exit 4).

The helpers here turn all of that into one documented exception per format, raised from a
shallow frame (the parser's recursion has unwound by then, so handling it cannot overflow
again), and refuse inputs larger than any real file of that kind before parsing them. What
an unparsable file *means* is each caller's decision: a property failure, a harness change,
an import of every module.
"""

from __future__ import annotations

import ast
import re
import warnings

# Larger than any hand-written or typical generated module. Beyond it ``ast.parse`` costs
# seconds and gigabytes (about 400 bytes of tree per byte of dense source), so the file is
# reported as unparsable instead; callers treat that conservatively.
MAX_PYTHON_BYTES = 2 * 1024 * 1024

# ``tomllib`` is quadratic in the parts of a dotted key and slow per key besides: an 80 KB
# key ``a.b.b.b...`` takes 35 s. A pytest configuration file is a few kilobytes; these
# bounds keep the worst case under two seconds.
MAX_TOML_BYTES = 256 * 1024
MAX_TOML_DOTS_PER_LINE = 128

# What parsing (or walking the result of) untrusted source can raise besides its format's
# own error: deep nesting (RecursionError, MemoryError for the PEG parser's stack), NUL
# bytes and over-long integer literals (ValueError, which includes UnicodeError), and
# OverflowError from a literal that does not fit.
PARSE_FAILURES: tuple[type[BaseException], ...] = (
    SyntaxError,
    ValueError,
    RecursionError,
    MemoryError,
    OverflowError,
)
# What a recursive walk over an already parsed tree can raise because the tree is deep.
DEPTH_FAILURES: tuple[type[BaseException], ...] = (RecursionError, MemoryError)


class Unreadable(ValueError):
    """Untrusted content that cannot be parsed safely. ``str()`` is one line saying why;
    ``line`` is the 1-based line of the problem when known."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def failure_reason(exc: BaseException) -> str:
    """Return one line saying why parsing failed with ``exc`` (any of ``PARSE_FAILURES``
    or a format's own error). Never raises."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to parse"
    if isinstance(exc, MemoryError):
        return "too complex to parse (nested too deeply, or too large)"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 (byte {exc.start})"
    if isinstance(exc, UnicodeError):
        return "not valid Unicode text (a lone surrogate)"
    if isinstance(exc, SyntaxError):
        return _one_line(str(exc.msg or "invalid syntax"))
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a reason must never fail to be produced
        text = ""
    return _one_line(text) or type(exc).__name__


def python_syntax_error(exc: BaseException, filename: str) -> SyntaxError:
    """Return a ``SyntaxError`` standing for any failure ``exc`` to parse or walk the Python
    source ``filename``: ``exc`` itself when it is one, else one whose ``msg`` is
    ``failure_reason(exc)`` (no line: nesting and size have none)."""
    if isinstance(exc, SyntaxError):
        return exc
    return SyntaxError(failure_reason(exc), (filename, None, None, None))


def parse_python(source: str | bytes, filename: str) -> ast.Module:
    """Parse untrusted Python ``source`` (bytes honour a PEP 263 coding line).

    Returns the module's tree. Raises ``SyntaxError`` for every reason the source cannot be
    parsed: invalid syntax, NUL bytes, bytes that are not text in the declared encoding,
    nesting deeper than the parser or the tree builder allows (``RecursionError``,
    ``MemoryError`` upstream), or more than ``MAX_PYTHON_BYTES`` bytes (characters, for
    text; refused unparsed). Warnings the parser would print (an invalid escape sequence)
    are suppressed: the source is the patch's, and its noise is not patchlane's output. A
    recursive walk of the returned tree can still be too deep for Python's stack: callers
    that walk recursively also catch ``DEPTH_FAILURES``.
    """
    if len(source) > MAX_PYTHON_BYTES:
        limit = MAX_PYTHON_BYTES // (1024 * 1024)
        raise SyntaxError(f"larger than {limit} MiB: not parsed", (filename, None, None, None))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source, filename=filename)
    except PARSE_FAILURES as e:
        # Raised here, after the parser's C and Python frames are gone: this handler runs
        # at the caller's depth, so it cannot overflow again.
        raise python_syntax_error(e, filename) from None


def _too_many_dots(data: bytes) -> int | None:
    """Return the 1-based number of the first line with more than
    ``MAX_TOML_DOTS_PER_LINE`` dots, or ``None``. Linear in ``data``."""
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.count(b".") > MAX_TOML_DOTS_PER_LINE:
            return number
    return None


def load_toml(data: bytes) -> dict[str, object]:
    """Parse untrusted TOML bytes.

    Returns the document as ``tomllib`` builds it. Raises ``Unreadable`` (with the line
    when known) for bytes that are not UTF-8, invalid TOML, nesting too deep for
    ``tomllib``'s recursion, an integer too long to convert, more than ``MAX_TOML_BYTES``,
    or a line with more than ``MAX_TOML_DOTS_PER_LINE`` dots (the last two are refused
    unparsed: ``tomllib`` would take minutes).
    """
    import tomllib  # only pyproject.toml readers pay for the import

    if len(data) > MAX_TOML_BYTES:
        raise Unreadable(f"larger than {MAX_TOML_BYTES // 1024} KiB: not parsed")
    dotted = _too_many_dots(data)
    if dotted is not None:
        raise Unreadable(f"more than {MAX_TOML_DOTS_PER_LINE} dots on one line: not parsed", dotted)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Unreadable(failure_reason(e), data.count(b"\n", 0, e.start) + 1) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        # tomllib puts "(at line N, column M)" in the message; it has no attribute for it.
        found = re.search(r"at line (\d+)", str(e))
        raise Unreadable(failure_reason(e), int(found.group(1)) if found else None) from None
    except PARSE_FAILURES as e:
        raise Unreadable(failure_reason(e)) from None
